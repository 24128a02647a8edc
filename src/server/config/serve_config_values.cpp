#include "server/config/serve_config_values.h"

#include <charconv>
#include <cmath>

#include "core/ascii.h"

namespace pagoda::server {
namespace {

std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.append(1, '\'').append(text).append(1, '\'');
  return out;
}

// The multiplier of a size unit (lower-case spellings), or 0 for an unknown one.
long double unit_bytes(std::string_view unit) {
  struct Unit {
    std::string_view name;
    long double bytes;
  };
  static constexpr Unit kUnits[] = {
      {"", 1.0L},         {"b", 1.0L},
      {"k", 0x1p10L},     {"kib", 0x1p10L}, {"kb", 1e3L},
      {"m", 0x1p20L},     {"mib", 0x1p20L}, {"mb", 1e6L},
      {"g", 0x1p30L},     {"gib", 0x1p30L}, {"gb", 1e9L},
      {"t", 0x1p40L},     {"tib", 0x1p40L}, {"tb", 1e12L}};
  for (const Unit& u : kUnits) {
    if (ascii_iequals(unit, u.name)) return u.bytes;
  }
  return 0.0L;
}

}  // namespace

std::string_view trim_spaces(std::string_view text) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

Expected<int64_t> parse_integer(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value);
  if (result.ec == std::errc::result_out_of_range) {
    return invalid_argument(quoted(text) + " is out of range " + std::to_string(min) + ".." +
                            std::to_string(max));
  }
  if (text.empty() || result.ec != std::errc() || result.ptr != end) {
    return invalid_argument(quoted(text) + " is not an integer");
  }
  if (value < min || value > max) {
    return invalid_argument(std::to_string(value) + " is out of range " + std::to_string(min) +
                            ".." + std::to_string(max));
  }
  return value;
}

Expected<double> parse_number(std::string_view text) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value);
  if (text.empty() || result.ec != std::errc() || result.ptr != end || !std::isfinite(value)) {
    return invalid_argument(quoted(text) + " is not a number");
  }
  return value;
}

Expected<uint64_t> parse_byte_size(std::string_view text) {
  const Status bad = invalid_argument(quoted(text) +
                                      " is not a size in bytes (e.g. 8388608, 512MiB, 4GiB)");
  std::string_view rest = trim_spaces(text);
  // The number: digits, optionally a '.' and more digits.
  size_t n = 0;
  while (n < rest.size() && ((rest[n] >= '0' && rest[n] <= '9') || rest[n] == '.')) ++n;
  const std::string_view number = rest.substr(0, n);
  if (number.empty() || number.front() == '.' || number.find('.') != number.rfind('.')) return bad;
  const long double multiplier = unit_bytes(trim_spaces(rest.substr(n)));
  if (multiplier == 0.0L) return bad;

  const size_t dot = std::min(number.find('.'), number.size());
  long double value = 0.0L;
  for (size_t i = 0; i < dot; ++i) value = value * 10 + (number[i] - '0');
  long double scale = 0.1L;
  for (size_t i = dot + 1; i < number.size(); ++i, scale /= 10) value += scale * (number[i] - '0');
  const long double bytes = std::floor(value * multiplier);
  if (!(bytes < 0x1p64L)) {
    return invalid_argument(quoted(text) + " is too large (at most 16 EiB)");
  }
  return static_cast<uint64_t>(bytes);
}

Expected<bool> parse_bool(std::string_view text) {
  for (std::string_view yes : {"true", "1", "yes", "on"}) {
    if (ascii_iequals(text, yes)) return true;
  }
  for (std::string_view no : {"false", "0", "no", "off"}) {
    if (ascii_iequals(text, no)) return false;
  }
  return invalid_argument(quoted(text) + " is not a boolean (true or false)");
}

Status check_choice(std::string_view text, const std::vector<std::string_view>& choices) {
  std::string list;
  for (std::string_view choice : choices) {
    if (text == choice) return Status::ok_status();
    if (!list.empty()) list += ", ";
    list += choice;
  }
  return invalid_argument(quoted(text) + " is not one of " + list);
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> items;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = trim_spaces(text.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

}  // namespace pagoda::server
