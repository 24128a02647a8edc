#include "grammar/json_schema_ranges.h"

#include <vector>

#include "grammar/regex_to_gbnf.h"

namespace pagoda::grammar {
namespace {

std::string alternatives(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

std::string digit_class(char first, char last) {
  if (first == last) return std::string("\"") + first + "\"";
  return std::string("[") + first + "-" + last + "]";
}

std::string any_digits(size_t count) { return count ? gbnf_repeat("[0-9]", count, count) : ""; }

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of one length between low and high (same length, low <= high).
std::string same_length_range(const std::string& low, const std::string& high) {
  if (low.empty()) return "";
  if (low == high) return "\"" + low + "\"";
  const std::string low_rest = low.substr(1);
  const std::string high_rest = high.substr(1);
  if (low[0] == high[0]) {
    return join(digit_class(low[0], low[0]), same_length_range(low_rest, high_rest));
  }
  const bool low_rest_is_floor = low_rest.find_first_not_of('0') == std::string::npos;
  const bool high_rest_is_ceiling = high_rest.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> parts;
  if (!low_rest_is_floor) {
    parts.push_back(join(digit_class(low[0], low[0]),
                         same_length_range(low_rest, std::string(low_rest.size(), '9'))));
  }
  const char middle_first = low_rest_is_floor ? low[0] : static_cast<char>(low[0] + 1);
  const char middle_last = high_rest_is_ceiling ? high[0] : static_cast<char>(high[0] - 1);
  if (middle_first <= middle_last) {
    parts.push_back(join(digit_class(middle_first, middle_last), any_digits(low_rest.size())));
  }
  if (!high_rest_is_ceiling) {
    parts.push_back(join(digit_class(high[0], high[0]),
                         same_length_range(std::string(high_rest.size(), '0'), high_rest)));
  }
  return alternatives(parts);
}

uint64_t power_of_ten(size_t exponent) {
  uint64_t value = 1;
  for (size_t i = 0; i < exponent; ++i) value *= 10;
  return value;
}

// Magnitudes in [low, high] (high missing: unbounded) written without leading zeros,
// as alternatives (one per length).
std::vector<std::string> magnitude_parts(uint64_t low, std::optional<uint64_t> high) {
  const size_t low_length = std::to_string(low).size();
  const size_t high_length = high ? std::to_string(*high).size() : low_length;
  std::vector<std::string> parts;
  for (size_t length = low_length; length <= high_length; ++length) {
    const uint64_t first = length == low_length ? low : power_of_ten(length - 1);
    // 10^length - 1 fits: magnitudes stay below 10^19 < 2^64.
    const uint64_t last = (high && length == high_length) ? *high : power_of_ten(length) - 1;
    parts.push_back(same_length_range(std::to_string(first), std::to_string(last)));
  }
  if (!high) parts.push_back(join("[1-9]", join(any_digits(low_length), "[0-9]*")));
  return parts;
}

std::string magnitude_range(uint64_t low, std::optional<uint64_t> high) {
  return alternatives(magnitude_parts(low, high));
}

uint64_t magnitude(int64_t value) {
  return value < 0 ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
}

constexpr const char* kAnyFraction = "(\".\" [0-9]+)?";
constexpr const char* kZeroFraction = "(\".\" \"0\"+)?";
constexpr const char* kNonZeroFraction = "\".\" [0-9]* [1-9] [0-9]*";

std::string quoted(uint64_t value) {
  std::string out = "\"";
  out += std::to_string(value);
  out += '"';
  return out;
}

struct MagnitudeBound {
  uint64_t value = 0;
  bool exclusive = false;
};

// Numbers I.F (no sign) with low <= I.F <= high, exclusive ends honoured.
std::string fractional_magnitudes(MagnitudeBound low, std::optional<MagnitudeBound> high) {
  const std::string low_text = quoted(low.value);
  if (high && high->value == low.value) {
    return (low.exclusive || high->exclusive) ? "" : join(low_text, kZeroFraction);
  }
  std::vector<std::string> parts;
  uint64_t any_first = low.value;
  if (low.exclusive) {
    parts.push_back(join(low_text, kNonZeroFraction));
    ++any_first;
  }
  // I in [any_first, high - 1] takes any fraction.
  if (!high) {
    parts.push_back(join(magnitude_range(any_first, std::nullopt), kAnyFraction));
  } else if (any_first <= high->value - 1) {
    parts.push_back(join(magnitude_range(any_first, high->value - 1), kAnyFraction));
  }
  if (high && !high->exclusive) {
    parts.push_back(join(quoted(high->value), kZeroFraction));
  }
  return parts.empty() ? "" : alternatives(parts);
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max) {
  std::vector<std::string> parts;
  if (!max || *max >= 0) {
    const uint64_t low = (min && *min > 0) ? static_cast<uint64_t>(*min) : 0;
    std::optional<uint64_t> high;
    if (max) high = static_cast<uint64_t>(*max);
    parts = magnitude_parts(low, high);
  }
  if (!min || *min < 0) {
    const uint64_t low = (max && *max < 0) ? magnitude(*max) : 1;
    std::optional<uint64_t> high;
    if (min) high = magnitude(*min);
    parts.push_back(join("\"-\"", magnitude_range(low, high)));
  }
  return alternatives(parts);
}

std::string number_range_gbnf(std::optional<NumberBound> lower, std::optional<NumberBound> upper) {
  std::vector<std::string> parts;
  // Non-negative numbers, written without a sign.
  if (!upper || upper->value > 0 || (upper->value == 0 && !upper->exclusive)) {
    MagnitudeBound low;
    if (lower && lower->value >= 0) low = {static_cast<uint64_t>(lower->value), lower->exclusive};
    std::optional<MagnitudeBound> high;
    if (upper) high = MagnitudeBound{static_cast<uint64_t>(upper->value), upper->exclusive};
    const std::string positive = fractional_magnitudes(low, high);
    if (!positive.empty()) parts.push_back(positive);
  }
  // Negative numbers: "-" and a magnitude above zero ("-0" and "-0.0" are left to the
  // non-negative side).
  if (!lower || lower->value < 0) {
    MagnitudeBound low{0, true};
    if (upper && upper->value < 0) low = {magnitude(upper->value), upper->exclusive};
    std::optional<MagnitudeBound> high;
    if (lower) high = MagnitudeBound{magnitude(lower->value), lower->exclusive};
    const std::string negative = fractional_magnitudes(low, high);
    if (!negative.empty()) parts.push_back(join("\"-\"", negative));
  }
  if (parts.empty()) return "";
  return alternatives(parts);
}

}  // namespace pagoda::grammar
