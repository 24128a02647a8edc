// Number filters: int, float, abs, round, with Python's conversions and rounding.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/filters_impl.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Python's int(text, base): surrounding whitespace, a sign, a 0x/0o/0b prefix (base 0,
// or the matching base), single underscores between digits.
std::optional<int64_t> parse_int(std::string_view text, int64_t base) {
  text = strip(text, std::nullopt, true, true);
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.size() >= 2 && text[0] == '0') {
    const char p = static_cast<char>(text[1] | 0x20);
    const int64_t prefix_base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefix_base != 0 && (base == 0 || base == prefix_base)) {
      base = prefix_base;
      text.remove_prefix(2);
      if (!text.empty() && text[0] == '_') text.remove_prefix(1);
    }
  }
  if (base == 0) {
    base = 10;
    if (text.size() > 1 && text[0] == '0' && text.find_first_not_of("0_") != std::string_view::npos)
      return std::nullopt;
  }
  if (base < 2 || base > 36 || text.empty()) return std::nullopt;
  int64_t value = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '_' && i > 0 && i + 1 < text.size() && text[i - 1] != '_') continue;
    const int d = digit_value(text[i]);
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, d, &value))
      return std::nullopt;
  }
  return negative ? -value : value;
}

// Python's float(text): decimal or scientific notation, inf, infinity, nan.
std::optional<double> parse_float(std::string_view text) {
  text = strip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '_') {
      const bool between = i > 0 && i + 1 < text.size() &&
                           std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(text[i + 1]));
      if (!between) return std::nullopt;
      continue;
    }
    if (c == 'x' || c == 'X' || c == '(' || c == 'p' || c == 'P')
      return std::nullopt;  // no hex, no nan(...)
    clean += c;
  }
  if (clean.empty()) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return value;
}

Expected<Value> filter_int(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a, bind_args("int", std::move(args), {{"default", Value(0)}, {"base", Value(10)}}));
  PAGODA_ASSIGN_OR_RETURN(const int64_t base, int_arg("int", "base", a[1]));
  if (input.is_integral()) return Value(input.as_integral());
  if (input.is_float()) {
    const double x = input.as_float();
    if (!std::isfinite(x) || std::fabs(x) >= 9.2e18) return a[0];
    return Value(static_cast<int64_t>(x));
  }
  if (input.is_string()) {
    if (auto value = parse_int(input.as_string(), base)) return Value(*value);
    // "42.23"|int is 42: jinja2 retries through float.
    if (auto value = parse_float(input.as_string());
        value && std::isfinite(*value) && std::fabs(*value) < 9.2e18) {
      return Value(static_cast<int64_t>(*value));
    }
  }
  return a[0];
}

Expected<Value> filter_float(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("float", std::move(args), {{"default", Value(0.0)}}));
  if (input.is_number()) return Value(input.as_double());
  if (input.is_string()) {
    if (auto value = parse_float(input.as_string())) return Value(*value);
  }
  return a[0];
}

Expected<Value> filter_abs(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("abs", std::move(args), {}).status());
  if (input.is_float()) return Value(std::fabs(input.as_float()));
  if (input.is_integral()) {
    if (input.as_integral() == std::numeric_limits<int64_t>::min())
      return invalid_argument("integer overflow");
    return Value(input.as_integral() < 0 ? -input.as_integral() : input.as_integral());
  }
  if (input.is_undefined()) return undefined_error(input);
  return invalid_argument("bad operand type for abs(): '" + std::string(type_name(input)) + "'");
}

// Python's round(x, ndigits): the exact binary value rounded half to even, which is
// what printf's %.*f does.
double round_python(double x, int64_t digits) {
  if (!std::isfinite(x) || digits > 320) return x;
  if (digits < 0) {
    const double scale = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / scale) * scale;
  }
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(digits), x);
  return std::strtod(buffer, nullptr);
}

Expected<Value> filter_round(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(
      auto a,
      bind_args("round", std::move(args), {{"precision", Value(0)}, {"method", Value("common")}}));
  PAGODA_ASSIGN_OR_RETURN(const int64_t precision, int_arg("round", "precision", a[0]));
  const std::string method = to_str(a[1]);
  if (method != "common" && method != "ceil" && method != "floor") {
    return invalid_argument("method must be common, ceil or floor");
  }
  if (input.is_undefined()) return undefined_error(input);
  if (!input.is_number())
    return invalid_argument("type " + std::string(type_name(input)) +
                            " doesn't define __round__ method");
  if (method == "common") {
    if (input.is_integral() && precision >= 0) return Value(input.as_integral());
    return Value(round_python(input.as_double(), precision));
  }
  const double scale =
      std::pow(10.0, static_cast<double>(std::clamp<int64_t>(precision, -320, 320)));
  const double scaled = input.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

}  // namespace

namespace filters {

const NamedFilter kNumberFilters[] = {
    {"int", filter_int},
    {"float", filter_float},
    {"abs", filter_abs},
    {"round", filter_round},
};
const size_t kNumberFilterCount = std::size(kNumberFilters);

}  // namespace filters

}  // namespace pagoda::jinja
