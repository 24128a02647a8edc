#include "grammar/regex_parser.h"

#include <algorithm>
#include <string>

#include "core/unicode.h"

namespace pagoda::grammar {
namespace {

// Repetition counts above this are refused: each one becomes grammar text.
constexpr size_t kMaxRepeatCount = 10000;
// Groups nested deeper than this are refused (the parser recurses per group).
constexpr int kMaxGroupDepth = 200;
// Code points the pattern would expand to with every repetition written out: more is
// refused ("(a{1000}){1000}" is a few bytes of pattern and a million of grammar).
constexpr size_t kMaxExpandedSize = 100000;

// The expanded size of a node (its counted repetitions written out), capped.
size_t expanded_size(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kCharacter: return 1;
    case RegexNode::Kind::kSequence:
    case RegexNode::Kind::kAlternation: {
      size_t total = 0;
      for (const RegexNode& child : node.children) total = std::min(total + expanded_size(child), kMaxExpandedSize + 1);
      return total;
    }
    case RegexNode::Kind::kRepeat: {
      const size_t copies = std::max<size_t>(node.max.value_or(node.min + 1), 1);
      return std::min(expanded_size(node.children[0]) * copies, kMaxExpandedSize + 1);
    }
  }
  return 0;
}

CodepointSet digit_set() { return CodepointSet::of('0', '9'); }

CodepointSet word_set() {
  CodepointSet set = CodepointSet::of('a', 'z');
  set.add('A', 'Z');
  set.add('0', '9');
  set.add('_');
  return set;
}

CodepointSet space_set() {
  CodepointSet set = CodepointSet::of('\t', '\r');  // \t \n \v \f \r
  set.add(' ');
  return set;
}

RegexNode character(CodepointSet set) {
  RegexNode node;
  node.kind = RegexNode::Kind::kCharacter;
  node.set = std::move(set);
  return node;
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) : pattern_(pattern) {}

  Expected<RegexNode> parse() {
    if (peek_is('^')) ++pos_;
    PAGODA_ASSIGN_OR_RETURN(RegexNode root, parse_alternation());
    if (pos_ < pattern_.size()) {
      // Only an unmatched ')' stops the top-level alternation early.
      return error("unmatched ')'", pos_);
    }
    if (expanded_size(root) > kMaxExpandedSize) {
      return error("pattern larger than " + std::to_string(kMaxExpandedSize) +
                   " characters once its repetitions are written out", 0);
    }
    return root;
  }

 private:
  bool at_end() const { return pos_ >= pattern_.size(); }
  bool peek_is(char c) const { return pos_ < pattern_.size() && pattern_[pos_] == c; }

  Status error(const std::string& what, size_t offset) const {
    return invalid_argument("regex: " + what + " at offset " + std::to_string(offset) +
                            " in '" + std::string(pattern_) + "'");
  }

  uint32_t next_codepoint() { return decode_utf8(pattern_, pos_); }

  Expected<RegexNode> parse_alternation() {
    RegexNode alternation;
    alternation.kind = RegexNode::Kind::kAlternation;
    while (true) {
      PAGODA_ASSIGN_OR_RETURN(RegexNode sequence, parse_sequence());
      alternation.children.push_back(std::move(sequence));
      if (!peek_is('|')) break;
      ++pos_;
    }
    if (alternation.children.size() == 1) return std::move(alternation.children[0]);
    return alternation;
  }

  Expected<RegexNode> parse_sequence() {
    RegexNode sequence;
    sequence.kind = RegexNode::Kind::kSequence;
    while (!at_end() && !peek_is('|') && !peek_is(')')) {
      if (peek_is('$')) {
        const size_t offset = pos_++;
        if (!at_end() && !peek_is(')') && !peek_is('|')) {
          return error("anchor '$' before the end of the pattern (unsupported)", offset);
        }
        if (!at_end() || depth_ > 0) {
          return error("anchor '$' inside a group or alternative (unsupported)", offset);
        }
        break;
      }
      PAGODA_ASSIGN_OR_RETURN(RegexNode atom, parse_atom());
      PAGODA_ASSIGN_OR_RETURN(RegexNode repeated, parse_quantifiers(std::move(atom)));
      sequence.children.push_back(std::move(repeated));
    }
    return sequence;
  }

  Expected<RegexNode> parse_quantifiers(RegexNode atom) {
    bool quantified = false;
    while (!at_end()) {
      const size_t offset = pos_;
      size_t min = 0;
      std::optional<size_t> max;
      const char c = pattern_[pos_];
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c == '{') {
        if (!parse_braces(min, max)) break;  // a literal '{'
      } else {
        break;
      }
      if (quantified) return error("nothing to repeat before '" + std::string(1, c) + "'", offset);
      if (max && *max < min) return error("repetition {m,n} with n < m", offset);
      if (min > kMaxRepeatCount || (max && *max > kMaxRepeatCount)) {
        return error("repetition count above " + std::to_string(kMaxRepeatCount), offset);
      }
      quantified = true;
      if (peek_is('?')) ++pos_;  // lazy: the same strings, so generated like greedy
      RegexNode repeat;
      repeat.kind = RegexNode::Kind::kRepeat;
      repeat.min = min;
      repeat.max = max;
      repeat.children.push_back(std::move(atom));
      atom = std::move(repeat);
    }
    return atom;
  }

  // {m}, {m,}, {m,n} or {,n}; leaves pos_ alone and returns false for any other '{'.
  bool parse_braces(size_t& min, std::optional<size_t>& max) {
    size_t p = pos_ + 1;
    auto read_number = [&](std::optional<size_t>& out) {
      size_t value = 0;
      const size_t start = p;
      while (p < pattern_.size() && pattern_[p] >= '0' && pattern_[p] <= '9') {
        value = std::min<size_t>(value * 10 + (pattern_[p] - '0'), kMaxRepeatCount + 1);
        ++p;
      }
      if (p > start) out = value;
    };
    std::optional<size_t> low, high;
    read_number(low);
    if (p < pattern_.size() && pattern_[p] == '}') {
      if (!low) return false;
      min = *low;
      max = *low;
    } else if (p < pattern_.size() && pattern_[p] == ',') {
      ++p;
      read_number(high);
      if (p >= pattern_.size() || pattern_[p] != '}' || (!low && !high)) return false;
      min = low.value_or(0);
      max = high;
    } else {
      return false;
    }
    pos_ = p + 1;
    return true;
  }

  Expected<RegexNode> parse_atom() {
    const size_t offset = pos_;
    const char c = pattern_[pos_];
    switch (c) {
      case '(': return parse_group();
      case '[': return parse_class();
      case '.': {
        ++pos_;
        CodepointSet set = CodepointSet::all();
        return character(set.minus(CodepointSet::of('\n', '\n')).minus(CodepointSet::of('\r', '\r')));
      }
      case '\\': {
        PAGODA_ASSIGN_OR_RETURN(CodepointSet set, parse_escape(/*in_class=*/false));
        return character(std::move(set));
      }
      case '^': return error("anchor '^' after the start of the pattern (unsupported)", offset);
      case '*':
      case '+':
      case '?': return error("nothing to repeat before '" + std::string(1, c) + "'", offset);
      default: {
        const uint32_t codepoint = next_codepoint();
        return character(CodepointSet::of(codepoint, codepoint));
      }
    }
  }

  Expected<RegexNode> parse_group() {
    const size_t offset = pos_++;
    if (peek_is('?')) {
      const std::string_view rest = pattern_.substr(pos_);
      if (rest.starts_with("?:")) {
        pos_ += 2;
      } else if (rest.starts_with("?=") || rest.starts_with("?!")) {
        return error("lookahead '(" + std::string(rest.substr(0, 2)) + "' (unsupported)", offset);
      } else if (rest.starts_with("?<=") || rest.starts_with("?<!")) {
        return error("lookbehind '(" + std::string(rest.substr(0, 3)) + "' (unsupported)", offset);
      } else if (rest.starts_with("?<") || rest.starts_with("?P<")) {
        const size_t close = pattern_.find('>', pos_);
        if (close == std::string_view::npos) return error("unterminated group name", offset);
        pos_ = close + 1;  // a named group matches like any other
      } else {
        return error("group flag '(?" + std::string(rest.substr(1, 1)) + "' (unsupported)", offset);
      }
    }
    if (++depth_ > kMaxGroupDepth) return error("groups nested deeper than " + std::to_string(kMaxGroupDepth), offset);
    PAGODA_ASSIGN_OR_RETURN(RegexNode inner, parse_alternation());
    --depth_;
    if (!peek_is(')')) return error("unmatched '('", offset);
    ++pos_;
    return inner;
  }

  Expected<RegexNode> parse_class() {
    const size_t offset = pos_++;
    bool negated = false;
    if (peek_is('^')) {
      negated = true;
      ++pos_;
    }
    CodepointSet set;
    bool first = true;
    while (true) {
      if (at_end()) return error("unterminated character class '['", offset);
      if (peek_is(']') && !first) break;
      first = false;
      const size_t item_offset = pos_;
      PAGODA_ASSIGN_OR_RETURN(CodepointSet low, parse_class_atom());
      const bool is_range = peek_is('-') && pos_ + 1 < pattern_.size() && pattern_[pos_ + 1] != ']';
      if (!is_range) {
        set.add(low);
        continue;
      }
      ++pos_;
      PAGODA_ASSIGN_OR_RETURN(CodepointSet high, parse_class_atom());
      const auto& lr = low.ranges();
      const auto& hr = high.ranges();
      const bool single = lr.size() == 1 && hr.size() == 1 && lr[0].first == lr[0].second &&
                          hr[0].first == hr[0].second;
      if (!single) return error("class escape as a range end", item_offset);
      if (lr[0].first > hr[0].first) return error("range out of order in class", item_offset);
      set.add(lr[0].first, hr[0].first);
    }
    ++pos_;  // ']'
    return character(negated ? set.complement() : set);
  }

  Expected<CodepointSet> parse_class_atom() {
    if (peek_is('\\')) return parse_escape(/*in_class=*/true);
    if (pattern_.substr(pos_).starts_with("[:")) {
      return error("POSIX class '[:' (unsupported)", pos_);
    }
    const uint32_t codepoint = next_codepoint();
    return CodepointSet::of(codepoint, codepoint);
  }

  // At a backslash: the set one escape stands for.
  Expected<CodepointSet> parse_escape(bool in_class) {
    const size_t offset = pos_++;
    if (at_end()) return error("trailing backslash", offset);
    const char c = pattern_[pos_++];
    auto one = [](uint32_t codepoint) { return CodepointSet::of(codepoint, codepoint); };
    switch (c) {
      case 'd': return digit_set();
      case 'D': return digit_set().complement();
      case 'w': return word_set();
      case 'W': return word_set().complement();
      case 's': return space_set();
      case 'S': return space_set().complement();
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 't': return one('\t');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case '0': return one(0);
      case 'b':
        if (in_class) return one('\b');
        return error("word boundary '\\b' (unsupported)", offset);
      case 'B': return error("word boundary '\\B' (unsupported)", offset);
      case 'k': return error("backreference '\\k' (unsupported)", offset);
      case 'p':
      case 'P': return error("Unicode property '\\" + std::string(1, c) + "' (unsupported)", offset);
      case 'x': return parse_hex_escape(2, offset);
      case 'u':
        if (peek_is('{')) return parse_braced_hex(offset);
        return parse_hex_escape(4, offset);
      default: break;
    }
    if (c >= '1' && c <= '9') {
      return error("backreference '\\" + std::string(1, c) + "' (unsupported)", offset);
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      return error("escape '\\" + std::string(1, c) + "' (unsupported)", offset);
    }
    --pos_;  // an escaped punctuation mark or other character stands for itself
    const uint32_t codepoint = next_codepoint();
    return one(codepoint);
  }

  Expected<CodepointSet> parse_hex_escape(size_t digits, size_t offset) {
    uint32_t value = 0;
    for (size_t i = 0; i < digits; ++i) {
      const int digit = at_end() ? -1 : hex_value(pattern_[pos_]);
      if (digit < 0) return error("bad hexadecimal escape", offset);
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    return CodepointSet::of(value, value);
  }

  Expected<CodepointSet> parse_braced_hex(size_t offset) {
    ++pos_;  // '{'
    uint32_t value = 0;
    size_t digits = 0;
    while (!at_end() && hex_value(pattern_[pos_]) >= 0 && digits < 7) {
      value = value * 16 + static_cast<uint32_t>(hex_value(pattern_[pos_++]));
      ++digits;
    }
    if (digits == 0 || !peek_is('}') || value > kMaxCodepoint) {
      return error("bad '\\u{...}' escape", offset);
    }
    ++pos_;
    return CodepointSet::of(value, value);
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  std::string_view pattern_;
  size_t pos_ = 0;
  int depth_ = 0;  // open groups around pos_
};

}  // namespace

Expected<RegexNode> parse_regex(std::string_view pattern) { return RegexParser(pattern).parse(); }

}  // namespace pagoda::grammar
