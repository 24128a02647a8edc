#include "tokenizer/custom_splitters.h"

#include "core/unicode.h"

namespace pagoda::tokenizer {
namespace {

constexpr uint32_t kOutside = 0xFFFFFFFF;  // "code point" of a position outside the piece

// One piece being scanned: positions outside [begin, end) read as kOutside with no flags.
class Scanner {
 public:
  Scanner(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& lengths)
      : cpts_(cpts), begin_(begin), end_(end), cut_(begin), lengths_(lengths) {}

  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  uint32_t cpt(size_t pos) const { return inside(pos) ? cpts_[pos] : kOutside; }
  CodepointFlags flags(size_t pos) const { return inside(pos) ? codepoint_flags(cpts_[pos]) : CodepointFlags{}; }

  // Ends the current word at `stop`; returns its length (0 emits nothing).
  size_t cut(size_t stop) {
    const size_t length = stop - cut_;
    if (length > 0) lengths_.push_back(length);
    cut_ = stop;
    return length;
  }
  size_t last_cut() const { return cut_; }

 private:
  bool inside(size_t pos) const { return pos >= begin_ && pos < end_; }
  const std::vector<uint32_t>& cpts_;
  size_t begin_, end_, cut_;
  std::vector<size_t>& lengths_;
};

bool is_newline(uint32_t cpt) { return cpt == '\r' || cpt == '\n'; }

// 's 't 'm 'd 're 've 'll at `pos`: the length of the contraction, or 0.
size_t contraction_length(const Scanner& s, size_t pos, bool any_case) {
  if (s.cpt(pos) != '\'' || pos + 1 >= s.end()) return 0;
  const auto fold = [&](uint32_t c) { return any_case ? ascii_tolower(c) : c; };
  const uint32_t next = fold(s.cpt(pos + 1));
  if (next == 's' || next == 't' || next == 'm' || next == 'd') return 2;
  if (pos + 2 >= s.end()) return 0;
  const uint32_t after = fold(s.cpt(pos + 2));
  if ((next == 'r' && after == 'e') || (next == 'v' && after == 'e') || (next == 'l' && after == 'l')) return 3;
  return 0;
}

// Whitespace at `pos` (or nothing matched at all): where the word ends. With
// `newline_rule`, \s*[\r\n]+ first takes everything up to the last newline of the run;
// then \s+(?!\S) leaves the last space of a run to the word that follows it.
size_t whitespace_end(const Scanner& s, size_t pos, bool newline_rule) {
  size_t count = 0;
  size_t after_last_newline = 0;
  while (s.flags(pos + count).is_whitespace()) {
    if (newline_rule && is_newline(s.cpt(pos + count))) after_last_newline = pos + count + 1;
    ++count;
  }
  if (after_last_newline > 0) return after_last_newline;
  if (count > 1 && s.cpt(pos + count) != kOutside) return pos + count - 1;
  if (count > 0) return pos + count;
  return pos + 1;  // no alternative matches: the character stands alone
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& lengths) {
  Scanner s(cpts, begin, end, lengths);
  for (size_t pos = begin; pos < end;) {
    const uint32_t cpt = s.cpt(pos);
    if (const size_t n = contraction_length(s, pos, /*any_case=*/false)) {
      pos += s.cut(pos + n);
      continue;
    }
    CodepointFlags next = cpt == ' ' ? s.flags(pos + 1) : s.flags(pos);
    const auto other = [](CodepointFlags f) {
      return !(f.is_whitespace() || f.is_letter() || f.is_number()) && f.exists();
    };
    if (next.is_letter() || next.is_number() || other(next)) {
      const bool letters = next.is_letter(), numbers = next.is_number();
      pos += cpt == ' ';
      while (letters ? next.is_letter() : numbers ? next.is_number() : other(next)) next = s.flags(++pos);
      s.cut(pos);
      continue;
    }
    pos = whitespace_end(s, pos, /*newline_rule=*/false);
    s.cut(pos);
  }
}

// The Llama-3 family:
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Qwen2 takes digits one by one (max 1); Qwen3.5 also counts marks (\p{M}) as letters.
template <size_t kMaxDigits, bool kMarksAreLetters>
void split_llama3_family(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& lengths) {
  Scanner s(cpts, begin, end, lengths);
  const auto letterish = [](CodepointFlags f) {
    return f.is_letter() || (kMarksAreLetters && f.category() == Category::kMark);
  };
  for (size_t pos = begin; pos < end;) {
    const uint32_t cpt = s.cpt(pos);
    const CodepointFlags flags = s.flags(pos);
    if (const size_t n = contraction_length(s, pos, /*any_case=*/true)) {
      pos += s.cut(pos + n);
      continue;
    }
    if (!(is_newline(cpt) || flags.is_number()) && (letterish(flags) || letterish(s.flags(pos + 1)))) {
      ++pos;
      while (letterish(s.flags(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    if (flags.is_number()) {
      size_t group_start = pos;
      while (s.flags(pos).is_number()) {
        if (++pos - group_start >= kMaxDigits) {
          s.cut(pos);
          group_start = pos;
        }
      }
      s.cut(pos);
      continue;
    }
    CodepointFlags next = cpt == ' ' ? s.flags(pos + 1) : flags;
    const auto other = [&](CodepointFlags f) { return !(f.is_whitespace() || letterish(f) || f.is_number()); };
    // The reference tests the current character's flags here, not the next one's.
    if (other(next) && flags.exists()) {
      pos += cpt == ' ';
      while (other(next) && next.exists()) next = s.flags(++pos);
      while (is_newline(s.cpt(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    pos = whitespace_end(s, pos, /*newline_rule=*/true);
    s.cut(pos);
  }
}

bool is_han(uint32_t cpt) {
  return (cpt >= 0x4E00 && cpt <= 0x9FFF) || (cpt >= 0x3400 && cpt <= 0x4DBF) ||
         (cpt >= 0x20000 && cpt <= 0x2A6DF) || (cpt >= 0x2A700 && cpt <= 0x2B73F) ||
         (cpt >= 0x2B740 && cpt <= 0x2B81F) || (cpt >= 0x2B820 && cpt <= 0x2CEAF) ||
         (cpt >= 0x2CEB0 && cpt <= 0x2EBEF) || (cpt >= 0xF900 && cpt <= 0xFAFF) ||
         (cpt >= 0x2F800 && cpt <= 0x2FA1F);
}

// Kimi-K2: [\p{Han}]+ | letters without Han, with an optional leading non-letter and an
// optional trailing contraction | \p{N}{1,3} | the Llama-3 punctuation and whitespace rules.
void split_kimi_k2(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& lengths) {
  Scanner s(cpts, begin, end, lengths);
  const auto plain_letter = [&](size_t p) { return s.flags(p).is_letter() && !is_han(s.cpt(p)); };
  for (size_t pos = begin; pos < end;) {
    const uint32_t cpt = s.cpt(pos);
    const CodepointFlags flags = s.flags(pos);
    if (is_han(cpt)) {
      while (is_han(s.cpt(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    const bool can_lead = !(is_newline(cpt) || flags.is_letter() || flags.is_number());
    if (plain_letter(pos) || (can_lead && plain_letter(pos + 1))) {
      pos += can_lead;
      while (plain_letter(pos)) ++pos;
      if (s.cpt(pos) == '\'' && pos + 1 < end) {
        const size_t n = contraction_length(s, pos, /*any_case=*/true);
        pos += n;
      }
      s.cut(pos);
      continue;
    }
    if (flags.is_number()) {
      size_t group_start = pos;
      while (s.flags(pos).is_number()) {
        if (++pos - group_start >= 3) {
          s.cut(pos);
          group_start = pos;
        }
      }
      s.cut(pos);
      continue;
    }
    CodepointFlags next = cpt == ' ' ? s.flags(pos + 1) : flags;
    const auto other = [](CodepointFlags f) {
      return !(f.is_whitespace() || f.is_letter() || f.is_number()) && f.exists();
    };
    if (other(next)) {
      pos += cpt == ' ';
      while (other(next)) next = s.flags(++pos);
      while (is_newline(s.cpt(pos))) ++pos;
      s.cut(pos);
      continue;
    }
    pos = whitespace_end(s, pos, /*newline_rule=*/true);
    s.cut(pos);
  }
}

// AFMoE (and Tiny Aya's \d{1,3}(?=(?:\d{3})*\b)): every run of digits is cut into
// groups of three counted from its end; the text between runs stays whole.
void split_digit_groups(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& lengths) {
  Scanner s(cpts, begin, end, lengths);
  for (size_t pos = begin; pos < end;) {
    if (!s.flags(pos).is_number()) {
      ++pos;
      continue;
    }
    const size_t run_start = pos;
    while (pos < end && s.flags(pos).is_number()) ++pos;
    size_t current = run_start;
    if (const size_t head = (pos - run_start) % 3) s.cut(current += head);
    while (current < pos) s.cut(current += 3);
  }
  if (s.last_cut() < end) s.cut(end);
}

// [^\n]+|[\n]+
void split_newline_runs(const std::vector<uint32_t>& cpts, size_t begin, size_t end, std::vector<size_t>& lengths) {
  for (size_t pos = begin; pos < end;) {
    const bool newline = cpts[pos] == '\n';
    const size_t run_start = pos;
    while (pos < end && (cpts[pos] == '\n') == newline) ++pos;
    lengths.push_back(pos - run_start);
  }
}

}  // namespace

SplitterFn find_custom_splitter(std::string_view regex) {
  constexpr std::string_view kContractions = R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]))";
  constexpr std::string_view kContractionsI = R"((?i:'s|'t|'re|'ve|'m|'ll|'d))";
  constexpr std::string_view kLlama3Tail =
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  constexpr std::string_view kQwen2Tail =
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  constexpr std::string_view kQwen35Tail =
      R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const auto is = [&](std::string_view head, std::string_view tail) {
    return regex.size() == head.size() + tail.size() && regex.substr(0, head.size()) == head &&
           regex.substr(head.size()) == tail;
  };
  if (regex == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))") return split_gpt2;
  if (is(kContractions, kLlama3Tail) || is(kContractionsI, kLlama3Tail)) return split_llama3_family<3, false>;
  if (is(kContractions, kQwen2Tail)) return split_llama3_family<1, false>;
  if (is(kContractions, kQwen35Tail)) return split_llama3_family<1, true>;
  if (regex == R"(\p{Han}+)") return split_kimi_k2;
  if (regex == R"(\p{AFMoE_digits})" || regex == R"(\d{1,3}(?=(?:\d{3})*\b))") return split_digit_groups;
  if (regex == R"([^\n]+|[\n]+)") return split_newline_runs;
  return nullptr;
}

}  // namespace pagoda::tokenizer
