#include "jinja/text.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/unicode.h"

namespace pagoda::jinja {

std::vector<size_t> codepoint_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  size_t offset = 0;
  while (offset < text.size()) {
    offsets.push_back(offset);
    next_codepoint(text, offset);
  }
  offsets.push_back(text.size());
  return offsets;
}

size_t codepoint_count(std::string_view text) {
  size_t count = 0;
  for (size_t offset = 0; offset < text.size(); ++count) next_codepoint(text, offset);
  return count;
}

uint32_t next_codepoint(std::string_view text, size_t& offset) {
  return decode_utf8(text, offset);
}

void append_codepoint(std::string& out, uint32_t cpt) {
  append_utf8(out, cpt);
}

bool is_space(uint32_t cpt) {
  return (cpt >= 0x1C && cpt <= 0x1F) || codepoint_flags(cpt).is_whitespace();
}
bool is_alpha(uint32_t cpt) {
  return codepoint_flags(cpt).is_letter();
}
bool is_digit(uint32_t cpt) {
  return codepoint_flags(cpt).is_number();
}

namespace {

// The set of code points a strip() argument names.
bool in_chars(uint32_t cpt, std::optional<std::string_view> chars) {
  if (!chars) return is_space(cpt);
  for (size_t offset = 0; offset < chars->size();) {
    if (next_codepoint(*chars, offset) == cpt) return true;
  }
  return false;
}

}  // namespace

std::string_view strip(std::string_view text, std::optional<std::string_view> chars, bool left,
                       bool right) {
  const std::vector<size_t> offsets = codepoint_offsets(text);
  size_t begin = 0;
  size_t end = offsets.size() - 1;  // characters [begin, end)
  auto char_at = [&](size_t i) {
    size_t offset = offsets[i];
    return next_codepoint(text, offset);
  };
  if (left) {
    while (begin < end && in_chars(char_at(begin), chars)) ++begin;
  }
  if (right) {
    while (end > begin && in_chars(char_at(end - 1), chars)) --end;
  }
  return text.substr(offsets[begin], offsets[end] - offsets[begin]);
}

namespace {

// Splits on runs of whitespace from the left, at most `maxsplit` times (< 0: no limit).
std::vector<std::string> split_whitespace(std::string_view text, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t offset = 0;
  while (true) {
    // Skip whitespace.
    size_t start = offset;
    while (start < text.size()) {
      size_t next = start;
      if (!is_space(next_codepoint(text, next))) break;
      start = next;
    }
    if (start >= text.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      // The rest, with trailing whitespace stripped, is the last piece.
      parts.emplace_back(strip(text.substr(start), std::nullopt, false, true));
      break;
    }
    size_t end = start;
    while (end < text.size()) {
      size_t next = end;
      if (is_space(next_codepoint(text, next))) break;
      end = next;
    }
    parts.emplace_back(text.substr(start, end - start));
    offset = end;
  }
  return parts;
}

}  // namespace

std::vector<std::string> split(std::string_view text, std::optional<std::string_view> sep,
                               int64_t maxsplit) {
  if (!sep) return split_whitespace(text, maxsplit);
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t found = text.find(*sep, start);
    if (found == std::string_view::npos) break;
    parts.emplace_back(text.substr(start, found - start));
    start = found + sep->size();
  }
  parts.emplace_back(text.substr(start));
  return parts;
}

std::vector<std::string> rsplit(std::string_view text, std::optional<std::string_view> sep,
                                int64_t maxsplit) {
  if (maxsplit < 0) return split(text, sep, maxsplit);  // the same pieces either way
  std::vector<std::string> parts;
  if (!sep) {
    // From the right: reverse the work on code point boundaries.
    std::string_view rest = strip(text, std::nullopt, false, true);
    while (!rest.empty() && static_cast<int64_t>(parts.size()) < maxsplit) {
      const std::vector<size_t> offsets = codepoint_offsets(rest);
      size_t i = offsets.size() - 1;
      auto is_space_at = [&](size_t k) {
        size_t offset = offsets[k];
        return is_space(next_codepoint(rest, offset));
      };
      while (i > 0 && !is_space_at(i - 1)) --i;
      parts.emplace_back(rest.substr(offsets[i]));
      rest = strip(rest.substr(0, offsets[i]), std::nullopt, false, true);
    }
    if (!rest.empty()) parts.emplace_back(rest);
  } else {
    size_t end = text.size();
    while (static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t found = text.rfind(*sep, end - sep->size());
      if (found == std::string_view::npos) break;
      parts.emplace_back(text.substr(found + sep->size(), end - found - sep->size()));
      end = found;
    }
    parts.emplace_back(text.substr(0, end));
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> splitlines(std::string_view text, bool keepends) {
  std::vector<std::string> lines;
  size_t start = 0;
  size_t offset = 0;
  while (offset < text.size()) {
    const size_t at = offset;
    const uint32_t cpt = next_codepoint(text, offset);
    const bool boundary = (cpt >= 0x0A && cpt <= 0x0D) || (cpt >= 0x1C && cpt <= 0x1E) ||
                          cpt == 0x85 || cpt == 0x2028 || cpt == 0x2029;
    if (!boundary) continue;
    if (cpt == '\r' && offset < text.size() && text[offset] == '\n') ++offset;
    lines.emplace_back(text.substr(start, (keepends ? offset : at) - start));
    start = offset;
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

std::string replace(std::string_view text, std::string_view old, std::string_view with,
                    int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts `with` before every character and at the end.
    const std::vector<size_t> offsets = codepoint_offsets(text);
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      out += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    const size_t found = text.find(old, start);
    if (found == std::string_view::npos) break;
    out += text.substr(start, found - start);
    out += with;
    start = found + old.size();
    ++done;
  }
  out += text.substr(start);
  return out;
}

int64_t count_occurrences(std::string_view text, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(codepoint_count(text)) + 1;
  int64_t n = 0;
  for (size_t at = text.find(sub); at != std::string_view::npos;
       at = text.find(sub, at + sub.size())) {
    ++n;
  }
  return n;
}

int64_t find(std::string_view text, std::string_view sub, bool reverse) {
  const size_t at = reverse ? text.rfind(sub) : text.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(codepoint_count(text.substr(0, at)));
}

std::string repr_string(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t offset = 0; offset < text.size();) {
    const size_t at = offset;
    const uint32_t cpt = next_codepoint(text, offset);
    if (cpt == static_cast<uint32_t>(quote) || cpt == '\\') {
      out += '\\';
      out += static_cast<char>(cpt);
    } else if (cpt == '\n') {
      out += "\\n";
    } else if (cpt == '\r') {
      out += "\\r";
    } else if (cpt == '\t') {
      out += "\\t";
    } else if (cpt < 0x20 || cpt == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", cpt);
      out += buffer;
    } else if (cpt < 0x80) {
      out += static_cast<char>(cpt);
    } else {
      // Python's str.isprintable(): not separators (other than space), controls,
      // format characters, private use, surrogates or unassigned code points.
      const Category category = codepoint_flags(cpt).category();
      const bool printable = category != Category::kSeparator && category != Category::kControl &&
                             category != Category::kUndefined;
      if (printable || (cpt == kReplacementCharacter && offset - at == 1)) {
        out += text.substr(at, offset - at);
      } else {
        char buffer[16];
        const char* format = cpt < 0x100 ? "\\x%02x" : cpt < 0x10000 ? "\\u%04x" : "\\U%08x";
        std::snprintf(buffer, sizeof buffer, format, cpt);
        out += buffer;
      }
    }
  }
  out += quote;
  return out;
}

std::string repr_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: plain notation when the decimal
  // exponent is in [-4, 16), scientific with a two-digit exponent otherwise.
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::scientific);
  std::string_view scientific(buffer.data(), static_cast<size_t>(result.ptr - buffer.data()));
  const size_t e = scientific.find('e');
  std::string mantissa(scientific.substr(0, e));
  const int exponent = std::stoi(std::string(scientific.substr(e + 1)));
  std::string sign;
  if (!mantissa.empty() && mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buffer[16];
    std::snprintf(exp_buffer, sizeof exp_buffer, "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + exp_buffer;
  }
  const int point = exponent + 1;  // digits before the decimal point
  if (point <= 0) return sign + "0." + std::string(static_cast<size_t>(-point), '0') + digits;
  if (static_cast<size_t>(point) >= digits.size()) {
    return sign + digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
  }
  return sign + digits.substr(0, static_cast<size_t>(point)) + "." +
         digits.substr(static_cast<size_t>(point));
}

}  // namespace pagoda::jinja
