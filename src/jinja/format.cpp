// Python's two string formatting languages: "%s %d" % args and "{} {x}".format(...).
#include <cstdio>
#include <string>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

// Pads `text` to `width` characters: right-aligned unless `left`.
std::string pad(std::string text, int64_t width, bool left, char fill = ' ') {
  const auto length = static_cast<int64_t>(codepoint_count(text));
  if (width <= length) return text;
  const std::string padding(static_cast<size_t>(width - length), fill);
  return left ? text + padding : padding + text;
}

std::string truncate_chars(const std::string& text, int64_t precision) {
  if (precision < 0) return text;
  const std::vector<size_t> offsets = codepoint_offsets(text);
  if (static_cast<size_t>(precision) + 1 >= offsets.size()) return text;
  return text.substr(0, offsets[static_cast<size_t>(precision)]);
}

// A C format of one integer or float conversion, as snprintf writes it (Python's
// printf-style numbers follow C's).
template <typename T>
std::string c_format(const std::string& spec, T value) {
  char buffer[512];
  const int n = std::snprintf(buffer, sizeof buffer, spec.c_str(), value);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buffer) return std::string(buffer, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.resize(static_cast<size_t>(n));
  return out;
}

struct PercentSpec {
  std::string flags;
  int64_t width = -1;
  int64_t precision = -1;
  char type = 's';
};

Expected<std::string> percent_one(const PercentSpec& spec, const Value& arg) {
  const bool left = spec.flags.find('-') != std::string::npos;
  std::string width = spec.width >= 0 ? std::to_string(spec.width) : "";
  std::string precision =
      spec.precision >= 0 ? std::string(".").append(std::to_string(spec.precision)) : "";
  switch (spec.type) {
    case 's':
      return pad(truncate_chars(to_str(arg), spec.precision), spec.width, left);
    case 'r':
    case 'a':
      return pad(truncate_chars(repr(arg), spec.precision), spec.width, left);
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      const bool hex = spec.type == 'x' || spec.type == 'X' || spec.type == 'o';
      if (!arg.is_number() || (hex && arg.is_float())) {
        return invalid_argument(std::string("%") + spec.type +
                                " format: " + (hex ? "an integer" : "a real number") +
                                " is required, not " + std::string(type_name(arg)));
      }
      const long long value =
          arg.is_float() ? static_cast<long long>(arg.as_float()) : arg.as_integral();
      const char type = spec.type == 'i' || spec.type == 'u' ? 'd' : spec.type;
      return c_format("%" + spec.flags + width + precision + "ll" + type, value);
    }
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
      if (!arg.is_number()) {
        return invalid_argument(std::string("must be real number, not ") +
                                std::string(type_name(arg)));
      }
      return c_format("%" + spec.flags + width + precision + spec.type, arg.as_double());
    case 'c':
      if (arg.is_integral()) {
        std::string out;
        append_codepoint(out, static_cast<uint32_t>(arg.as_integral()));
        return pad(out, spec.width, left);
      }
      if (arg.is_string() && codepoint_count(arg.as_string()) == 1)
        return pad(arg.as_string(), spec.width, left);
      return invalid_argument("%c requires an int or a unicode character");
    default:
      return invalid_argument(std::string("unsupported format character '") + spec.type + "'");
  }
}

}  // namespace

Expected<std::string> percent_format(std::string_view format, const Value& args, size_t max_bytes) {
  std::vector<Value> positional = args.is_tuple() ? args.items() : std::vector<Value>{args};
  const DictData* mapping = args.is_dict() ? &args.as_dict() : nullptr;
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) return invalid_argument("incomplete format");
    std::optional<std::string> key;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string_view::npos) return invalid_argument("incomplete format key");
      key = std::string(format.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    PercentSpec spec;
    while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos)
      spec.flags += format[i++];
    auto number = [&](int64_t& target) {
      if (i < format.size() && format[i] >= '0' && format[i] <= '9') {
        target = 0;
        while (i < format.size() && format[i] >= '0' && format[i] <= '9' && target < 100000)
          target = target * 10 + (format[i++] - '0');
      }
    };
    number(spec.width);
    if (i < format.size() && format[i] == '.') {
      ++i;
      spec.precision = 0;
      number(spec.precision);
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
    if (i >= format.size()) return invalid_argument("incomplete format");
    spec.type = format[i];
    if (spec.type == '%') {
      out += '%';
      continue;
    }
    Value arg;
    if (key) {
      if (mapping == nullptr) return invalid_argument("format requires a mapping");
      const Value* found = mapping->find(std::string_view(*key));
      if (found == nullptr) return invalid_argument("KeyError: " + repr_string(*key));
      arg = *found;
    } else {
      if (next >= positional.size())
        return invalid_argument("not enough arguments for format string");
      arg = positional[next++];
    }
    PAGODA_ASSIGN_OR_RETURN(std::string piece, percent_one(spec, arg));
    out += piece;
    if (out.size() > max_bytes)
      return resource_exhausted("'%' formatting result over the size limit");
  }
  // Python skips this check when the argument could be a mapping (anything indexable
  // but a tuple or a str: a dict, and also a list).
  const bool maybe_mapping = args.is_dict() || (args.is_list() && !args.is_tuple());
  if (!maybe_mapping && next < positional.size()) {
    return invalid_argument("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace pagoda::jinja
