#include "grammar/gbnf.h"

#include <cstdio>
#include <optional>

#include "core/unicode.h"

namespace pagoda::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A parse error: where (byte offset) and what.
struct ParseError {
  size_t pos;
  std::string message;
};

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Expected<Grammar> parse(std::string_view root_rule) {
    if (auto err = parse_rules()) return error(*err);
    for (int32_t r = 0; r < grammar_.n_rules(); ++r) {
      if (!info_[r].defined) {
        return error({info_[r].first_use, "undefined rule '" + grammar_.rule(r).name + "'"});
      }
    }
    const int32_t root = grammar_.find_rule(root_rule);
    if (root < 0 || info_[root].helper) {
      return error({text_.size(), "no root rule '" + std::string(root_rule) + "' (define it with '" +
                                      std::string(root_rule) + " ::= ...')"});
    }
    grammar_.set_root(root);
    Status s = grammar_.validate();
    if (!s.ok()) {
      // Point at the definition of the first rule the message names.
      size_t where = text_.size();
      const std::string& m = s.message();
      const size_t q = m.find('\'');
      if (q != std::string::npos) {
        const size_t q2 = m.find('\'', q + 1);
        const int32_t r = q2 == std::string::npos ? -1 : grammar_.find_rule(m.substr(q + 1, q2 - q - 1));
        if (r >= 0) where = info_[r].defined_at;
        if (r >= 0 && info_[r].helper && m.rfind("left recursion", 0) == 0) {
          return error({where, m + "; here a repetition repeats something that can match the empty string"});
        }
      }
      return error({where, m});
    }
    return std::move(grammar_);
  }

 private:
  struct RuleInfo {
    bool defined = false;
    bool helper = false;
    size_t defined_at = 0;
    size_t first_use = 0;
  };

  Status error(const ParseError& e) const {
    size_t line = 1;
    size_t col = 1;
    for (size_t i = 0; i < e.pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return invalid_argument("line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + e.message);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // Skips blanks and comments; newlines too when newline_ok.
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // The rule named `name` (created, undefined, on first sight). A helper rule that took
  // the name first moves aside.
  int32_t user_rule(const std::string& name, size_t at) {
    int32_t r = grammar_.find_rule(name);
    if (r >= 0 && info_[r].helper) {
      grammar_.rename_rule(r, grammar_.unique_rule_name(name + "-h"));
      r = -1;
    }
    if (r < 0) {
      r = grammar_.add_rule(name);
      info_.resize(grammar_.n_rules());
      info_[r].first_use = at;
    }
    return r;
  }

  void note_new_helpers(size_t at) {
    const size_t old = info_.size();
    info_.resize(grammar_.n_rules());
    for (size_t i = old; i < info_.size(); ++i) info_[i] = RuleInfo{true, true, at, at};
  }

  std::optional<ParseError> parse_rules() {
    while (true) {
      skip_space(true);
      if (at_end()) return std::nullopt;
      const size_t start = pos_;
      std::string name;
      while (!at_end() && is_name_char(peek())) name += text_[pos_++];
      if (name.empty()) return ParseError{start, std::string("expected a rule name, found '") + peek() + "'"};
      skip_space(false);
      if (text_.substr(pos_, 3) != "::=") return ParseError{pos_, "expected '::=' after rule name '" + name + "'"};
      pos_ += 3;
      const int32_t r = user_rule(name, start);
      if (info_[r].defined) {
        return ParseError{start, "rule '" + name + "' is defined twice (first at " + where(info_[r].defined_at) + ")"};
      }
      info_[r].defined = true;
      info_[r].defined_at = start;
      skip_space(true);
      std::vector<Sequence> alts;
      if (auto err = parse_alternatives(name, /*nested=*/false, alts)) return err;
      grammar_.rule(r).alternatives = std::move(alts);
      skip_space(false);
      if (!at_end() && peek() != '\n' && peek() != '\r') {
        return ParseError{pos_, std::string("unexpected '") + peek() + "' in rule '" + name + "'"};
      }
    }
  }

  std::string where(size_t pos) const {
    const std::string m = error({pos, ""}).message();
    return m.substr(0, m.size() - 2);
  }

  std::optional<ParseError> parse_alternatives(const std::string& base, bool nested, std::vector<Sequence>& alts) {
    alts.emplace_back();
    if (auto err = parse_sequence(base, nested, alts.back())) return err;
    while (true) {
      skip_space(nested);
      if (peek() == '|') {
        ++pos_;
        skip_space(true);
        alts.emplace_back();
        if (auto err = parse_sequence(base, nested, alts.back())) return err;
        continue;
      }
      if (!nested && (peek() == '\n' || peek() == '\r')) {
        // A following line that starts with '|' continues the rule.
        const size_t save = pos_;
        skip_space(true);
        if (peek() == '|') continue;
        pos_ = save;
      }
      return std::nullopt;
    }
  }

  std::optional<ParseError> parse_sequence(const std::string& base, bool nested, Sequence& seq) {
    size_t atom_start = 0;      // where the last atom's elements start in seq
    bool have_atom = false;
    std::vector<Sequence> atom;  // the last atom as alternatives (for repetition)
    while (true) {
      skip_space(nested);
      const size_t start = pos_;
      const char c = peek();
      if (at_end()) return std::nullopt;
      if (c == '"') {
        Sequence lit;
        if (auto err = parse_literal(lit)) return err;
        atom_start = seq.size();
        seq.insert(seq.end(), lit.begin(), lit.end());
        atom = {std::move(lit)};
        have_atom = true;
      } else if (c == '[') {
        Element cls;
        if (auto err = parse_class(cls)) return err;
        atom_start = seq.size();
        seq.push_back(cls);
        atom = {Sequence{cls}};
        have_atom = true;
      } else if (c == '.') {
        ++pos_;
        atom_start = seq.size();
        seq.push_back(Element::any_char());
        atom = {Sequence{Element::any_char()}};
        have_atom = true;
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        std::vector<Sequence> alts;
        if (auto err = parse_alternatives(base, /*nested=*/true, alts)) return err;
        skip_space(true);
        if (peek() != ')') {
          if (at_end()) return ParseError{start, "unclosed '('"};
          return ParseError{pos_, std::string("expected ')', found '") + peek() + "'"};
        }
        ++pos_;
        atom_start = seq.size();
        const size_t after = pos_;
        skip_space(nested);
        const char next = peek();
        pos_ = after;
        if (alts.size() == 1) {
          seq.insert(seq.end(), alts[0].begin(), alts[0].end());
        } else if (next == '*' || next == '+' || next == '?' || next == '{') {
          // The repetition makes its own helper rules from the alternatives.
        } else {
          const int32_t g = grammar_.add_helper_rule(base);
          note_new_helpers(start);
          grammar_.rule(g).alternatives = alts;
          seq.push_back(Element::rule_ref(g));
        }
        atom = std::move(alts);
        have_atom = true;
      } else if (is_name_char(c)) {
        std::string name;
        while (!at_end() && is_name_char(peek())) name += text_[pos_++];
        const int32_t r = user_rule(name, start);
        atom_start = seq.size();
        seq.push_back(Element::rule_ref(r));
        atom = {Sequence{Element::rule_ref(r)}};
        have_atom = true;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_atom) return ParseError{start, std::string("'") + c + "' repeats nothing (no element before it)"};
        int32_t min = 0;
        int32_t max = kUnbounded;
        ++pos_;
        if (c == '+') {
          min = 1;
        } else if (c == '?') {
          max = 1;
        } else if (c == '{') {
          if (auto err = parse_braces(start, min, max)) return err;
        }
        seq.resize(atom_start);
        Status s = grammar_.append_repetition(seq, base, atom, min, max);
        note_new_helpers(start);
        if (!s.ok()) return ParseError{start, s.message()};
        atom = {Sequence(seq.begin() + static_cast<std::ptrdiff_t>(atom_start), seq.end())};
      } else {
        return std::nullopt;  // ')', '|', a newline or something the caller reports
      }
    }
  }

  std::optional<ParseError> parse_braces(size_t start, int32_t& min, int32_t& max) {
    auto number = [&](int64_t& out) {
      skip_space(true);
      if (!(peek() >= '0' && peek() <= '9')) return false;
      out = 0;
      while (peek() >= '0' && peek() <= '9') {
        out = std::min<int64_t>(out * 10 + (peek() - '0'), int64_t{1} << 40);
        ++pos_;
      }
      skip_space(true);
      return true;
    };
    int64_t lo = 0;
    int64_t hi = -1;
    if (!number(lo)) return ParseError{pos_, "expected a number after '{'"};
    if (peek() == ',') {
      ++pos_;
      if (!number(hi)) hi = -1;
    } else {
      hi = lo;
    }
    if (peek() != '}') return ParseError{pos_, "expected '}' to close the repetition"};
    ++pos_;
    const std::string range = std::string(text_.substr(start, pos_ - start));
    if (hi >= 0 && hi < lo) {
      return ParseError{start, "bad repetition range " + range + ": the maximum is less than the minimum"};
    }
    if (lo > Grammar::kMaxRepetition || hi > Grammar::kMaxRepetition) {
      return ParseError{start, "bad repetition range " + range + ": counts above " +
                                   std::to_string(Grammar::kMaxRepetition) + " are not supported"};
    }
    min = static_cast<int32_t>(lo);
    max = hi < 0 ? kUnbounded : static_cast<int32_t>(hi);
    return std::nullopt;
  }

  // One character of a literal or class: an escape or a UTF-8 sequence.
  std::optional<ParseError> parse_char(uint32_t& cp) {
    const size_t start = pos_;
    if (peek() == '\\') {
      const char e = peek(1);
      pos_ += 2;
      switch (e) {
        case 'n': cp = '\n'; return std::nullopt;
        case 't': cp = '\t'; return std::nullopt;
        case 'r': cp = '\r'; return std::nullopt;
        case '\\': case '"': case '[': case ']': case '-': case '^': cp = static_cast<uint8_t>(e); return std::nullopt;
        case 'x': case 'u': case 'U': {
          const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint64_t v = 0;
          for (int i = 0; i < digits; ++i) {
            const int h = hex_value(peek());
            if (h < 0) {
              return ParseError{start, std::string("expected ") + std::to_string(digits) + " hex digits after '\\" + e + "'"};
            }
            v = v * 16 + static_cast<uint64_t>(h);
            ++pos_;
          }
          if (v > kMaxCodepoint) return ParseError{start, "escape above U+10FFFF"};
          cp = static_cast<uint32_t>(v);
          return std::nullopt;
        }
        default:
          if (start + 1 >= text_.size()) return ParseError{start, "escape '\\' at the end of the input"};
          return ParseError{start, std::string("unknown escape '\\") + e + "'"};
      }
    }
    const int n = utf8_validate_one(text_.substr(pos_));
    if (n <= 0) return ParseError{start, "invalid UTF-8 in the grammar text"};
    size_t o = pos_;
    cp = decode_utf8(text_, o);
    pos_ += static_cast<size_t>(n);
    return std::nullopt;
  }

  std::optional<ParseError> parse_literal(Sequence& out) {
    const size_t start = pos_++;
    while (true) {
      if (at_end()) return ParseError{start, "unterminated string literal (no closing '\"')"};
      if (peek() == '"') {
        ++pos_;
        return std::nullopt;
      }
      uint32_t cp = 0;
      if (auto err = parse_char(cp)) return err;
      out.push_back(Element::literal(cp));
    }
  }

  std::optional<ParseError> parse_class(Element& out) {
    const size_t start = pos_++;
    out = Element::char_class({}, false);
    if (peek() == '^') {
      out.negated = true;
      ++pos_;
    }
    while (true) {
      if (at_end()) return ParseError{start, "unterminated character class (no closing ']')"};
      if (peek() == ']') {
        ++pos_;
        return std::nullopt;
      }
      const size_t at = pos_;
      uint32_t lo = 0;
      if (auto err = parse_char(lo)) return err;
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (auto err = parse_char(hi)) return err;
        if (hi < lo) return ParseError{at, "bad character range (its end comes before its start)"};
      }
      out.ranges.push_back({lo, hi});
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar grammar_;
  std::vector<RuleInfo> info_;
};

void append_escaped(std::string& out, uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n': out += "\\n"; return;
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    case '\\': out += "\\\\"; return;
    case '"': out += "\\\""; return;
    default: break;
  }
  if (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^')) {
    out += '\\';
    out += static_cast<char>(cp);
    return;
  }
  char buf[16];
  if (cp < 0x20 || cp == 0x7F) {
    std::snprintf(buf, sizeof(buf), "\\x%02X", cp);
    out += buf;
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp >= 0xD800 && cp <= 0xDFFF) {
    std::snprintf(buf, sizeof(buf), "\\u%04X", cp);
    out += buf;
  } else {
    append_utf8(out, cp);
  }
}

}  // namespace

Expected<Grammar> parse_gbnf(std::string_view text, std::string_view root_rule) {
  return GbnfParser(text).parse(root_rule);
}

std::string to_gbnf(const Grammar& grammar) {
  // Rules in the order parse_gbnf numbers them when it reads the text back (the root,
  // then breadth first by first reference), so that printing is a fixed point.
  const int32_t n = grammar.n_rules();
  std::vector<int32_t> order;
  std::vector<char> seen(n, 0);
  auto add = [&](int32_t r) {
    if (r >= 0 && r < n && !seen[r]) {
      seen[r] = 1;
      order.push_back(r);
    }
  };
  add(grammar.root());
  for (int32_t next_unseen = 0; order.size() < static_cast<size_t>(n);) {
    for (size_t i = 0; i < order.size(); ++i) {
      for (const Sequence& alt : grammar.rule(order[i]).alternatives) {
        for (const Element& e : alt) {
          if (e.is_rule_ref()) add(e.rule);
        }
      }
    }
    while (next_unseen < n && seen[next_unseen]) ++next_unseen;
    if (next_unseen < n) add(next_unseen);
  }
  std::string out;
  for (int32_t r : order) {
    const Rule& rule = grammar.rule(r);
    out += rule.name;
    out += " ::=";
    if (rule.alternatives.empty()) out += " [] ";  // matches nothing
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      const Sequence& seq = rule.alternatives[a];
      if (seq.empty()) out += " \"\"";
      for (size_t i = 0; i < seq.size();) {
        const Element& e = seq[i];
        out += ' ';
        if (e.is_rule_ref()) {
          out += grammar.rule(e.rule).name;
          ++i;
        } else if (e.is_literal()) {
          out += '"';
          while (i < seq.size() && seq[i].is_literal()) append_escaped(out, seq[i++].ranges[0].first, false);
          out += '"';
        } else if (e.is_any_char()) {
          out += '.';
          ++i;
        } else {
          out += e.negated ? "[^" : "[";
          for (const CharRange& r : e.ranges) {
            append_escaped(out, r.first, true);
            if (r.last != r.first) {
              out += '-';
              append_escaped(out, r.last, true);
            }
          }
          out += ']';
          ++i;
        }
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace pagoda::grammar
