#include "jinja/lexer_tag.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

bool is_digit_char(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<uint8_t>(c) >= 0x80;
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit_char(c);
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// (\d+_)*\d+ at `p`: the offset after it, or p when there is none.
size_t digit_group(std::string_view s, size_t p) {
  size_t end = p;
  size_t i = p;
  while (i < s.size() && is_digit_char(s[i])) {
    while (i < s.size() && is_digit_char(s[i])) ++i;
    end = i;
    if (i + 1 < s.size() && s[i] == '_' && is_digit_char(s[i + 1])) ++i;
  }
  return end;
}

// Python's integer literal forms: 0b.., 0o.., 0x.. (with single '_' between digits),
// decimal without leading zeros, and zero ("0", "0_0").
size_t integer_literal(std::string_view s, size_t p, int& base) {
  base = 10;
  if (s[p] == '0' && p + 1 < s.size()) {
    const char prefix = static_cast<char>(s[p + 1] | 0x20);
    base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : prefix == 'x' ? 16 : 10;
    if (base != 10) {
      size_t i = p + 2;
      size_t end = 0;
      while (i < s.size()) {
        const size_t digit = (s[i] == '_') ? i + 1 : i;
        if (digit >= s.size() || digit_value(s[digit]) >= base) break;
        i = digit + 1;
        end = i;
      }
      if (end != 0) return end;
      base = 10;  // "0x" alone: the integer 0, then a name
    }
  }
  size_t i = p + 1;
  const bool zero = s[p] == '0';
  while (i < s.size()) {
    const size_t digit = (s[i] == '_') ? i + 1 : i;
    if (digit >= s.size() || !is_digit_char(s[digit]) || (zero && s[digit] != '0')) break;
    i = digit + 1;
  }
  return i;
}

void append_python_escape(std::string& out, uint32_t cpt) {
  char buffer[16];
  const char* format = cpt < 0x100 ? "\\x%02x" : cpt < 0x10000 ? "\\u%04x" : "\\U%08x";
  std::snprintf(buffer, sizeof buffer, format, cpt);
  out += buffer;
}

// \x, \u and \U: exactly `digits` hex digits at body[i].
Expected<uint32_t> hex_escape(std::string_view body, size_t i, int digits) {
  uint32_t value = 0;
  for (int k = 0; k < digits; ++k) {
    if (i + k >= body.size() || digit_value(body[i + k]) >= 16) {
      return invalid_argument("truncated \\" + std::string(1, body[i - 1]) + " escape in a string");
    }
    value = value * 16 + static_cast<uint32_t>(digit_value(body[i + k]));
  }
  if (value > 0x10FFFF) return invalid_argument("illegal Unicode character in a string escape");
  return value;
}

}  // namespace

Expected<std::string> decode_string_escapes(std::string_view body) {
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size();) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i++];
      continue;
    }
    const char c = body[i + 1];
    i += 2;
    switch (c) {
      case '\\':
        out += '\\';
        continue;
      case '\'':
        out += '\'';
        continue;
      case '"':
        out += '"';
        continue;
      case 'a':
        out += '\a';
        continue;
      case 'b':
        out += '\b';
        continue;
      case 'f':
        out += '\f';
        continue;
      case 'n':
        out += '\n';
        continue;
      case 'r':
        out += '\r';
        continue;
      case 't':
        out += '\t';
        continue;
      case 'v':
        out += '\v';
        continue;
      case '\n':
        continue;  // a backslash-newline joins lines
      case 'x':
      case 'u':
      case 'U': {
        const int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        PAGODA_ASSIGN_OR_RETURN(const uint32_t cpt, hex_escape(body, i, digits));
        append_codepoint(out, cpt);
        i += static_cast<size_t>(digits);
        continue;
      }
      case 'N':
        return invalid_argument("\\N{...} escapes are not supported");
      default:
        break;
    }
    if (c >= '0' && c <= '7') {
      uint32_t value = static_cast<uint32_t>(c - '0');
      for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k, ++i) {
        value = value * 8 + static_cast<uint32_t>(body[i] - '0');
      }
      append_codepoint(out, value);
    } else if (static_cast<uint8_t>(c) >= 0x80) {
      // jinja2 first escapes non-ASCII text as \xNN / \uNNNN, so a backslash before
      // such a character keeps that escape as literal text.
      size_t offset = i - 1;
      const uint32_t cpt = next_codepoint(body, offset);
      out += '\\';
      append_python_escape(out, cpt);
      i = offset;
    } else {
      out += '\\';  // unknown escapes stay as written
      out += c;
    }
  }
  return out;
}

Status TagScanner::error(std::string_view what) const {
  return invalid_argument(std::string(what));
}

Expected<std::optional<Token>> TagScanner::next() {
  size_t offset = pos_;
  if (is_space(next_codepoint(source_, offset))) {
    pos_ = offset;
    while (pos_ < source_.size()) {
      offset = pos_;
      if (!is_space(next_codepoint(source_, offset))) break;
      pos_ = offset;
    }
    return std::optional<Token>();
  }
  const char c = source_[pos_];
  if (is_digit_char(c)) {
    PAGODA_ASSIGN_OR_RETURN(Token token, number());
    return std::optional<Token>(std::move(token));
  }
  if (is_name_start(c)) return std::optional<Token>(name());
  if (c == '\'' || c == '"') {
    PAGODA_ASSIGN_OR_RETURN(Token token, string_literal());
    return std::optional<Token>(std::move(token));
  }
  PAGODA_ASSIGN_OR_RETURN(Token token, op());
  return std::optional<Token>(std::move(token));
}

Expected<Token> TagScanner::number() {
  const size_t start = pos_;
  // A float: digits, then a fraction and/or an exponent (not right after a '.').
  if (start == 0 || source_[start - 1] != '.') {
    size_t end = digit_group(source_, start);
    bool is_float = false;
    if (end + 1 < source_.size() && source_[end] == '.' && is_digit_char(source_[end + 1])) {
      end = digit_group(source_, end + 1);
      is_float = true;
    }
    if (end < source_.size() && (source_[end] | 0x20) == 'e') {
      size_t e = end + 1;
      if (e < source_.size() && (source_[e] == '+' || source_[e] == '-')) ++e;
      if (e < source_.size() && is_digit_char(source_[e])) {
        end = digit_group(source_, e);
        is_float = true;
      }
    }
    if (is_float) {
      std::string digits;
      for (size_t i = start; i < end; ++i) {
        if (source_[i] != '_') digits += source_[i];
      }
      pos_ = end;
      Token token{TokenKind::kFloat, 0, digits, 0, std::strtod(digits.c_str(), nullptr)};
      return token;
    }
  }
  int base = 10;
  const size_t end = integer_literal(source_, start, base);
  const size_t digits_start = start + (base == 10 ? 0 : 2);
  int64_t value = 0;
  for (size_t i = digits_start; i < end; ++i) {
    if (source_[i] == '_') continue;
    const int d = digit_value(source_[i]);
    if (value > (std::numeric_limits<int64_t>::max() - d) / base) {
      return error("integer literal " + std::string(source_.substr(start, end - start)) +
                   " does not fit in 64 bits");
    }
    value = value * base + d;
  }
  pos_ = end;
  return Token{TokenKind::kInteger, 0, std::string(source_.substr(start, end - start)), value, 0.0};
}

Token TagScanner::name() {
  const size_t start = pos_;
  while (pos_ < source_.size() && is_name_char(source_[pos_])) ++pos_;
  return Token{TokenKind::kName, 0, std::string(source_.substr(start, pos_ - start)), 0, 0.0};
}

Expected<Token> TagScanner::string_literal() {
  const char quote = source_[pos_];
  size_t i = pos_ + 1;
  while (i < source_.size() && source_[i] != quote) i += source_[i] == '\\' ? 2 : 1;
  if (i >= source_.size()) return error("unterminated string literal");
  PAGODA_ASSIGN_OR_RETURN(std::string value,
                          decode_string_escapes(source_.substr(pos_ + 1, i - pos_ - 1)));
  pos_ = i + 1;
  return Token{TokenKind::kString, 0, std::move(value), 0, 0.0};
}

Expected<Token> TagScanner::op() {
  static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", ">=", "<="};
  static constexpr std::string_view kOneChar = "+-/*%~[](){}><=.:|,;";
  std::string text;
  for (std::string_view candidate : kTwoChar) {
    if (source_.substr(pos_, 2) == candidate) text = candidate;
  }
  if (text.empty()) {
    const char c = source_[pos_];
    if (kOneChar.find(c) == std::string_view::npos) {
      size_t offset = pos_;
      const uint32_t cpt = next_codepoint(source_, offset);
      std::string shown;
      append_codepoint(shown, cpt);
      return error("unexpected char '" + shown + "'");
    }
    text = std::string(1, c);
    if (c == '(' || c == '[' || c == '{') {
      brackets_.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets_.empty()) return error("unexpected '" + text + "'");
      if (brackets_.back() != c) {
        return error("unexpected '" + text + "', expected '" + std::string(1, brackets_.back()) +
                     "'");
      }
      brackets_.pop_back();
    }
  }
  pos_ += text.size();
  return Token{TokenKind::kOperator, 0, std::move(text), 0, 0.0};
}

}  // namespace pagoda::jinja
