#include "tokenizer/pretokenizer.h"

#include <algorithm>
#include <array>

#include "core/unicode.h"
#include "tokenizer/byte_alphabet.h"
#include "tokenizer/custom_splitters.h"
#include "tokenizer/regex.h"

namespace pagoda::tokenizer {
namespace {

// The text being split, with the two derived forms the regexes run on, built on demand.
class SplitText {
 public:
  explicit SplitText(const std::vector<uint32_t>& text) : cpts(text) {}

  const std::vector<uint32_t>& cpts;

  // One byte per code point: ASCII as is, other White_Space as \v, other code points as
  // one byte per category group (see collapse_category_byte).
  const std::string& collapsed() {
    if (collapsed_.size() != cpts.size()) {
      collapsed_.resize(cpts.size());
      for (size_t i = 0; i < cpts.size(); ++i) collapsed_[i] = static_cast<char>(collapse(cpts[i]));
    }
    return collapsed_;
  }

  // UTF-8 in which non-ASCII White_Space is \v and code points PCRE2 would reject
  // (surrogates) are U+FFFF, which no pattern names; byte_offsets[i] is where code point
  // i starts (one extra entry for the end).
  const std::string& wide() {
    if (byte_offsets_.empty()) {
      byte_offsets_.reserve(cpts.size() + 1);
      for (uint32_t cpt : cpts) {
        byte_offsets_.push_back(wide_.size());
        if (cpt > 0x7F && codepoint_flags(cpt).is_whitespace()) cpt = 0x0B;
        if (cpt >= 0xD800 && cpt <= 0xDFFF) cpt = 0xFFFF;
        append_utf8(wide_, cpt);
      }
      byte_offsets_.push_back(wide_.size());
    }
    return wide_;
  }
  size_t wide_offset(size_t cpt_index) const { return byte_offsets_[cpt_index]; }
  size_t cpt_index_at(size_t byte_offset) const {
    return static_cast<size_t>(std::lower_bound(byte_offsets_.begin(), byte_offsets_.end(), byte_offset) -
                               byte_offsets_.begin());
  }

  static uint8_t collapse(uint32_t cpt) {
    if (cpt < 0x80) return static_cast<uint8_t>(cpt);
    const CodepointFlags flags = codepoint_flags(cpt);
    if (flags.is_whitespace()) return 0x0B;
    switch (flags.category()) {
      case Category::kNumber: return 0xD1;
      case Category::kLetter: return 0xD2;
      case Category::kPunctuation: return 0xD3;
      case Category::kMark: return 0xD4;
      case Category::kSymbol: return 0xD5;
      default: return 0xD0;
    }
  }

 private:
  std::string collapsed_;
  std::string wide_;
  std::vector<size_t> byte_offsets_;
};

// The categories a collapsed regex may name: each stands for its collapsed byte plus the
// ASCII characters of that category.
struct CategoryClass {
  std::string_view name;
  std::string_view members;
};
constexpr std::array<CategoryClass, 10> kCategoryClasses = {{
    {R"(\p{N})", R"(\x{D1}0-9)"},
    {R"(\p{L})", R"(\x{D2}A-Za-z)"},
    {R"(\p{P})", R"(\x{D3}!-#%-*,-/:-;?-@\[-\]_\{\})"},
    {R"(\p{M})", R"(\x{D4})"},
    {R"(\p{S})", R"(\x{D5}\$\+<->^`\|~)"},
    // Case and kind of letter are not told apart: every letter matches each of these.
    {R"(\p{Lu})", R"(\x{D2}A-Za-z)"},
    {R"(\p{Ll})", R"(\x{D2}A-Za-z)"},
    {R"(\p{Lt})", R"(\x{D2}A-Za-z)"},
    {R"(\p{Lm})", R"(\x{D2}A-Za-z)"},
    {R"(\p{Lo})", R"(\x{D2}A-Za-z)"},
}};

bool uses_categories(std::string_view regex) {
  return std::any_of(kCategoryClasses.begin(), kCategoryClasses.end(),
                     [&](const CategoryClass& c) { return regex.find(c.name) != std::string_view::npos; });
}

// Rewrites \p{..} into classes over the collapsed bytes (bracketed when outside a class).
Expected<std::string> collapse_regex(std::string_view regex) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char c = regex[i];
    if (static_cast<uint8_t>(c) >= 0x80) {
      return internal_error("pre-tokenizer regex mixes \\p{..} categories with non-ASCII characters");
    }
    const bool escaped = i > 0 && regex[i - 1] == '\\';
    if (c == '[' && !escaped) in_class = true;
    if (c == ']' && in_class && !escaped) in_class = false;
    if (c == '\\' && regex.substr(i, 3) == R"(\p{)") {
      const size_t close = regex.find('}', i + 3);
      const std::string_view name =
          close == std::string_view::npos ? std::string_view() : regex.substr(i, close - i + 1);
      const auto match = std::find_if(kCategoryClasses.begin(), kCategoryClasses.end(),
                                      [&](const CategoryClass& k) { return k.name == name; });
      if (match != kCategoryClasses.end()) {
        if (!in_class) out += '[';
        out += match->members;
        if (!in_class) out += ']';
        i = close;
        continue;
      }
    }
    out += c;
  }
  return out;
}

}  // namespace

// One step of the split: a hand-written splitter or a compiled regex.
class PreTokenizer::Step {
 public:
  static Expected<std::unique_ptr<Step>> create(std::string_view regex) {
    auto step = std::unique_ptr<Step>(new Step());
    step->splitter_ = find_custom_splitter(regex);
    if (step->splitter_ != nullptr) return step;
    step->collapsed_ = uses_categories(regex);
    if (step->collapsed_) {
      PAGODA_ASSIGN_OR_RETURN(const std::string pattern, collapse_regex(regex));
      PAGODA_ASSIGN_OR_RETURN(Regex compiled, Regex::compile(pattern, Regex::Mode::kBytes));
      step->regex_.emplace_back(std::move(compiled));
    } else {
      PAGODA_ASSIGN_OR_RETURN(Regex compiled, Regex::compile(regex, Regex::Mode::kUtf8));
      step->regex_.emplace_back(std::move(compiled));
    }
    return step;
  }

  // Splits each piece of `lengths` (code points of text.cpts, in order) further.
  std::vector<size_t> apply(SplitText& text, const std::vector<size_t>& lengths) const {
    std::vector<size_t> out;
    out.reserve(lengths.size() * 2);
    size_t begin = 0;
    for (size_t length : lengths) {
      if (splitter_ != nullptr) {
        splitter_(text.cpts, begin, begin + length, out);
      } else {
        split_by_regex(text, begin, begin + length, out);
      }
      begin += length;
    }
    return out;
  }

 private:
  Step() = default;

  // Matches and the text between them become pieces; empty matches add nothing.
  void split_by_regex(SplitText& text, size_t begin, size_t end, std::vector<size_t>& out) const {
    std::vector<std::pair<size_t, size_t>> matches;
    size_t base = begin;  // offsets within the subject count from here (bytes or code points)
    std::string_view subject;
    if (collapsed_) {
      subject = std::string_view(text.collapsed()).substr(begin, end - begin);
    } else {
      const std::string& wide = text.wide();
      base = text.wide_offset(begin);
      subject = std::string_view(wide).substr(base, text.wide_offset(end) - base);
    }
    // On a PCRE2 resource failure the rest of the piece stays whole (the matches found
    // so far still split it); the reference has no better answer for such input.
    (void)regex_[0].find_all(subject, matches);
    const auto to_cpt = [&](size_t offset) { return collapsed_ ? begin + offset : text.cpt_index_at(base + offset); };
    size_t previous = begin;
    for (const auto& [match_begin, match_end] : matches) {
      const size_t first = to_cpt(match_begin), last = to_cpt(match_end);
      if (first > previous) out.push_back(first - previous);
      if (last > first) out.push_back(last - first);
      previous = last;
    }
    if (previous < end) out.push_back(end - previous);
  }

  SplitterFn splitter_ = nullptr;
  bool collapsed_ = false;
  std::vector<Regex> regex_;  // one, unless a splitter stands in for it
};

PreTokenizer::~PreTokenizer() = default;

Expected<std::unique_ptr<PreTokenizer>> PreTokenizer::create(const PreTokenizerSpec& spec) {
  auto pre = std::unique_ptr<PreTokenizer>(new PreTokenizer());
  pre->byte_encode_ = spec.byte_encode;
  pre->keep_newline_runs_ = spec.newline_runs_whole;
  for (std::string_view regex : spec.regexes) {
    auto step = Step::create(regex);
    if (!step.ok()) {
      return Status(step.status().code(), "pre-tokenizer '" + std::string(spec.kind) + "': " +
                                              step.status().message());
    }
    pre->steps_.push_back(std::move(step).value());
  }
  return pre;
}

std::vector<size_t> PreTokenizer::split_lengths(const std::vector<uint32_t>& cpts) const {
  if (cpts.empty()) return {};
  SplitText text(cpts);
  std::vector<size_t> lengths = {cpts.size()};
  for (const auto& step : steps_) lengths = step->apply(text, lengths);
  return lengths;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  const std::vector<uint32_t> cpts = decode_utf8(text);
  const std::vector<size_t> lengths = split_lengths(cpts);
  std::vector<std::string> words;
  words.reserve(lengths.size());
  std::string utf8;
  size_t begin = 0;
  for (size_t length : lengths) {
    utf8.clear();
    for (size_t i = begin; i < begin + length; ++i) append_utf8(utf8, cpts[i]);
    begin += length;
    if (!byte_encode_) {
      words.push_back(utf8);
      continue;
    }
    std::string& word = words.emplace_back();
    word.reserve(utf8.size() * 2);
    for (char byte : utf8) word += byte_to_unicode_utf8(static_cast<uint8_t>(byte));
  }
  return words;
}

}  // namespace pagoda::tokenizer
