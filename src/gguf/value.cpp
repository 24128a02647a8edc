#include "gguf/value.h"

#include <array>
#include <charconv>
#include <cmath>

namespace pagoda::gguf {
namespace {

struct TypeEntry {
  std::string_view name;
  size_t size;  // bytes in a file; 0 when it depends on the contents
};

// Indexed by the file's type id.
constexpr std::array<TypeEntry, kValueTypeCount> kTypes = {{
    {"uint8", 1},
    {"int8", 1},
    {"uint16", 2},
    {"int16", 2},
    {"uint32", 4},
    {"int32", 4},
    {"float32", 4},
    {"bool", 1},
    {"string", 0},
    {"array", 0},
    {"uint64", 8},
    {"int64", 8},
    {"float64", 8},
}};

template <typename Number>
void append_number(std::string& out, Number n) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), n);
  out.append(buffer, result.ptr);
}

// The shortest text that reads back as the same value; positional between 1e-4 and
// 1e16 (as Python prints floats: 100000, 0.5), scientific outside (1e-05, 1e+20).
template <typename Float>
void append_float(std::string& out, Float x) {
  const Float magnitude = std::fabs(x);
  const bool positional = x == 0 || (magnitude >= Float(1e-4) && magnitude < Float(1e16));
  char buffer[128];
  const auto result =
      positional ? std::to_chars(buffer, buffer + sizeof(buffer), x, std::chars_format::fixed)
                 : std::to_chars(buffer, buffer + sizeof(buffer), x);
  out.append(buffer, result.ptr);
}

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 if it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not well-formed).
size_t utf8_sequence_length(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // allowed range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < length || byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return length;
}

void append_escaped_byte(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

void append_quoted(std::string& out, std::string_view s, size_t max_bytes) {
  out += '\'';
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\'':
        out += "\\'";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      append_escaped_byte(out, c);
      ++i;
      continue;
    }
    const size_t length = utf8_sequence_length(s.substr(i));
    if (length == 0) {
      append_escaped_byte(out, c);
      ++i;
    } else {
      out.append(s.substr(i, length));
      i += length;
    }
  }
  out += '\'';
  if (i < s.size()) {
    out += "... (";
    append_number(out, s.size());
    out += " bytes)";
  }
}

void append_display(std::string& out, const Value& value, size_t max_items,
                    size_t max_string_bytes);

void append_array(std::string& out, const Array& array, size_t max_items, size_t max_string_bytes) {
  out += "[array of ";
  append_number(out, array.items.size());
  out += ' ';
  out += value_type_name(array.element_type);
  out += "] [";
  for (size_t i = 0; i < array.items.size() && i < max_items; ++i) {
    if (i > 0) out += ", ";
    append_display(out, array.items[i], max_items, max_string_bytes);
  }
  if (array.items.size() > max_items) out += max_items > 0 ? ", ..." : "...";
  out += ']';
}

void append_display(std::string& out, const Value& value, size_t max_items,
                    size_t max_string_bytes) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          append_quoted(out, v, max_string_bytes);
        } else if constexpr (std::is_same_v<T, Array>) {
          append_array(out, v, max_items, max_string_bytes);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_floating_point_v<T>) {
          append_float(out, v);
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          append_number(out, static_cast<int>(v));  // not as a character
        } else {
          append_number(out, v);
        }
      },
      value.storage);
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kValueTypeCount ? kTypes[id].name : std::string_view("invalid");
}

std::optional<ValueType> value_type_from_id(uint32_t id) {
  if (id >= kValueTypeCount) return std::nullopt;
  return static_cast<ValueType>(id);
}

size_t value_type_size(ValueType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kValueTypeCount ? kTypes[id].size : 0;
}

std::string describe_type(const Value& value) {
  std::string out;
  const Value* current = &value;
  while (current->holds<Array>()) {
    const Array& array = current->as<Array>();
    out += "array of ";
    if (array.element_type != ValueType::ARRAY || array.items.empty()) {
      out += value_type_name(array.element_type);
      return out;
    }
    current = &array.items.front();
  }
  out += value_type_name(current->type());
  return out;
}

std::string quoted(std::string_view text, size_t max_bytes) {
  std::string out;
  append_quoted(out, text, max_bytes);
  return out;
}

std::string to_display_string(const Value& value, size_t max_items, size_t max_string_bytes) {
  std::string out;
  append_display(out, value, max_items, max_string_bytes);
  return out;
}

}  // namespace pagoda::gguf
