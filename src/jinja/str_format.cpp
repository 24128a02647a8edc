// str.format(): "{}", "{0}", "{name}", "{0.attr}", "{x[0]}", "{!r}", and format specs
// [[fill]align][sign][0][width][,|_][.precision][type].
#include <algorithm>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

struct FormatSpec {
  std::string fill = " ";
  char align = '\0';  // '<', '>', '^', '=' or default
  char sign = '-';
  bool zero = false;
  int64_t width = -1;
  char grouping = '\0';
  int64_t precision = -1;
  char type = '\0';
};

Expected<FormatSpec> parse_spec(std::string_view text) {
  FormatSpec spec;
  size_t i = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  size_t first = 0;
  const uint32_t first_cpt = text.empty() ? 0 : next_codepoint(text, first);
  if (first < text.size() && is_align(text[first])) {
    spec.fill.clear();
    append_codepoint(spec.fill, first_cpt);
    spec.align = text[first];
    i = first + 1;
  } else if (!text.empty() && is_align(text[0])) {
    spec.align = text[0];
    i = 1;
  }
  if (i < text.size() && (text[i] == '+' || text[i] == '-' || text[i] == ' '))
    spec.sign = text[i++];
  if (i < text.size() && text[i] == '0') {
    spec.zero = true;
    ++i;
  }
  auto number = [&](int64_t& target) {
    if (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      target = 0;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9' && target < 100000)
        target = target * 10 + (text[i++] - '0');
    }
  };
  number(spec.width);
  if (i < text.size() && (text[i] == ',' || text[i] == '_')) spec.grouping = text[i++];
  if (i < text.size() && text[i] == '.') {
    ++i;
    spec.precision = 0;
    number(spec.precision);
  }
  if (i < text.size()) spec.type = text[i++];
  if (i != text.size())
    return invalid_argument("invalid format specifier '" + std::string(text) + "'");
  return spec;
}

std::string group_digits(std::string digits, char separator) {
  const size_t start = (!digits.empty() && digits[0] == '-') ? 1 : 0;
  const size_t end = digits.find('.') == std::string::npos ? digits.size() : digits.find('.');
  for (size_t i = end; i > start + 3; i -= 3) digits.insert(i - 3, 1, separator);
  return digits;
}

Expected<std::string> format_number(const Value& value, const FormatSpec& spec) {
  std::string body;
  const char type = spec.type;
  if (type == '\0' || type == 'd' || type == 'n') {
    if (value.is_float()) {
      if (type != '\0')
        return invalid_argument("unknown format code 'd' for object of type 'float'");
      body = spec.precision >= 0 ? "" : repr_float(value.as_float());
      if (body.empty()) {
        char buffer[64];
        std::snprintf(buffer, sizeof buffer, "%.*g",
                      static_cast<int>(spec.precision == 0 ? 1 : spec.precision), value.as_float());
        body = buffer;
      }
    } else {
      body = std::to_string(value.as_integral());
    }
  } else if (std::string_view("eEfFgG%").find(type) != std::string_view::npos) {
    const double x = value.as_double() * (type == '%' ? 100.0 : 1.0);
    const int precision = static_cast<int>(spec.precision >= 0 ? spec.precision : 6);
    char buffer[512];
    std::snprintf(buffer, sizeof buffer, (std::string("%.*") + (type == '%' ? 'f' : type)).c_str(),
                  precision, x);
    body = std::string(buffer) + (type == '%' ? "%" : "");
  } else if (std::string_view("xXob").find(type) != std::string_view::npos && value.is_integral()) {
    int64_t n = value.as_integral();
    const bool negative = n < 0;
    uint64_t u = negative ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
    const int base = type == 'o' ? 8 : type == 'b' ? 2 : 16;
    const char* digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
      body.insert(body.begin(), digits[u % static_cast<uint64_t>(base)]);
      u /= static_cast<uint64_t>(base);
    } while (u != 0);
    if (negative) body.insert(body.begin(), '-');
  } else {
    return invalid_argument(std::string("unknown format code '") + type + "' for object of type '" +
                            std::string(type_name(value)) + "'");
  }
  if (spec.grouping != '\0') body = group_digits(body, spec.grouping);
  if (body[0] != '-' && spec.sign != '-') body.insert(body.begin(), spec.sign);
  return body;
}

Expected<std::string> apply_spec(const Value& value, std::string_view spec_text) {
  if (spec_text.empty()) return to_str(value);
  PAGODA_ASSIGN_OR_RETURN(FormatSpec spec, parse_spec(spec_text));
  std::string body;
  char align = spec.align;
  if (value.is_number() && !(spec.type == 's')) {
    PAGODA_ASSIGN_OR_RETURN(body, format_number(value, spec));
    if (align == '\0') align = spec.zero ? '=' : '>';
    if (spec.zero && spec.align == '\0') spec.fill = "0";
  } else if (value.is_string() && (spec.type == '\0' || spec.type == 's')) {
    body = value.as_string();
    if (spec.precision >= 0) {
      const std::vector<size_t> offsets = codepoint_offsets(body);
      if (static_cast<size_t>(spec.precision) + 1 < offsets.size())
        body.resize(offsets[static_cast<size_t>(spec.precision)]);
    }
    if (align == '\0') align = '<';
  } else {
    return invalid_argument("unsupported format string passed to " + std::string(type_name(value)) +
                            ".__format__");
  }
  const auto length = static_cast<int64_t>(codepoint_count(body));
  if (spec.width <= length) return body;
  const auto missing = static_cast<size_t>(spec.width - length);
  auto fill = [&](size_t n) {
    std::string out;
    for (size_t k = 0; k < n; ++k) out += spec.fill;
    return out;
  };
  switch (align) {
    case '<':
      return body + fill(missing);
    case '^':
      return fill(missing / 2) + body + fill(missing - missing / 2);
    case '=': {
      const size_t sign =
          (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
      return body.substr(0, sign) + fill(missing) + body.substr(sign);
    }
    default:
      return fill(missing) + body;
  }
}

// "0", "name", "0.attr", "name[key]".
Expected<Value> resolve_field(std::string_view field, const CallArgs& args, size_t& auto_index) {
  size_t end = 0;
  while (end < field.size() && field[end] != '.' && field[end] != '[') ++end;
  const std::string_view head = field.substr(0, end);
  Value value;
  if (head.empty() || (head.find_first_not_of("0123456789") == std::string_view::npos)) {
    const size_t index = head.empty() ? auto_index++ : std::stoul(std::string(head.substr(0, 9)));
    if (index >= args.positional.size()) {
      return invalid_argument("Replacement index " + std::to_string(index) +
                              " out of range for positional args tuple");
    }
    value = args.positional[index];
  } else {
    const auto it = std::find_if(args.keyword.begin(), args.keyword.end(),
                                 [&](const auto& kw) { return kw.first == head; });
    if (it == args.keyword.end()) return invalid_argument("KeyError: " + repr_string(head));
    value = it->second;
  }
  while (end < field.size()) {
    if (field[end] == '.') {
      size_t next = end + 1;
      while (next < field.size() && field[next] != '.' && field[next] != '[') ++next;
      PAGODA_ASSIGN_OR_RETURN(value, get_attribute(value, field.substr(end + 1, next - end - 1)));
      end = next;
    } else {
      const size_t close = field.find(']', end);
      if (close == std::string_view::npos) return invalid_argument("Missing ']' in format string");
      const std::string_view key = field.substr(end + 1, close - end - 1);
      const bool numeric =
          !key.empty() && key.find_first_not_of("0123456789") == std::string_view::npos;
      PAGODA_ASSIGN_OR_RETURN(
          value,
          get_item(value, numeric ? Value(int64_t{std::stoll(std::string(key.substr(0, 18)))})
                                  : Value(key)));
      end = close + 1;
    }
  }
  return value;
}

}  // namespace

Expected<std::string> str_format(std::string_view format, const CallArgs& args, size_t max_bytes) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return invalid_argument("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string_view::npos)
      return invalid_argument("Single '{' encountered in format string");
    std::string_view field = format.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string_view::npos)
      return invalid_argument("nested format fields are not supported");
    std::string_view spec;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conversion = '\0';
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      if (bang + 2 != field.size())
        return invalid_argument("expected ':' after conversion specifier");
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    PAGODA_ASSIGN_OR_RETURN(Value value, resolve_field(field, args, auto_index));
    if (conversion == 'r' || conversion == 'a')
      value = Value(repr(value));
    else if (conversion == 's')
      value = Value(to_str(value));
    else if (conversion != '\0')
      return invalid_argument(std::string("Unknown conversion specifier ") + conversion);
    PAGODA_ASSIGN_OR_RETURN(std::string piece, apply_spec(value, spec));
    out += piece;
    if (out.size() > max_bytes)
      return resource_exhausted("str.format() result over the size limit");
    i = close;
  }
  return out;
}

}  // namespace pagoda::jinja
