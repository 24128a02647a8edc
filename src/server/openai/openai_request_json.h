#pragma once
// Reading request JSON without exceptions: the body -> a JSON object (bad JSON, too
// deep, not an object: 400), and typed, range-checked field reads whose errors are
// OpenAI's (message, param, code). Internal to the protocol layer.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "server/openai/api_error.h"
#include "server/openai/openai_request.h"

namespace pagoda::server {

// The body as a JSON object. Errors (400): "invalid JSON: <what and where>", nesting
// deeper than kMaxJsonDepth, a document that is not an object.
ApiResult<Json> parse_json_object(std::string_view body);

// Allowed values of a number; bounds are inclusive unless marked exclusive.
struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  bool max_exclusive = false;
};
struct IntegerRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

// Errors in OpenAI's words.
// "Invalid type for 'p': expected a string, but got an integer instead." (invalid_type)
ApiError invalid_type(std::string param, std::string_view expected, const Json& got);
// "Missing required parameter: 'p'." (missing_required_parameter)
ApiError missing_parameter(std::string param);
// "Invalid 'p': empty array. Expected an array with minimum length 1, but got an empty
// array instead." (empty_array)
ApiError empty_array(std::string param);
// "Invalid 'p': empty string. Expected a string with minimum length 1, but got an
// empty string instead." (empty_string)
ApiError empty_string(std::string param);
// "Invalid value: 'x'. Supported values are: 'a', 'b', and 'c'." (invalid_value)
ApiError invalid_value(std::string param, std::string_view message);

// One value, checked. `param` names it in errors.
ApiResult<double> read_number(const Json& value, const std::string& param, NumberRange range);
// Integers, and decimals with an integral value (2.0), within `range`.
ApiResult<int64_t> read_integer(const Json& value, const std::string& param, IntegerRange range);
ApiResult<bool> read_bool(const Json& value, const std::string& param);
ApiResult<std::string> read_string(const Json& value, const std::string& param);

// Typed reads of one object's fields. A field that is absent or null reads as nullopt.
// The first error is kept and every later read returns nullopt, so a parser reads its
// fields in a row and checks ok() once.
class FieldReader {
 public:
  // `object` must be a JSON object and outlive the reader; `path` prefixes params
  // ("stream_options" -> "stream_options.include_usage").
  explicit FieldReader(const Json& object, std::string path = {});

  // The field's value when present and not null.
  const Json* find(std::string_view key) const;
  std::string param(std::string_view key) const;

  std::optional<double> number(std::string_view key, NumberRange range = {});
  std::optional<int64_t> integer(std::string_view key, IntegerRange range = {});
  std::optional<bool> boolean(std::string_view key);
  std::optional<std::string> string(std::string_view key);
  // The field when it is an object (or an array); nullptr when absent, null, or wrong.
  const Json* object(std::string_view key);
  const Json* array(std::string_view key);

  void fail(ApiError error);  // keeps the first
  bool ok() const { return !error_.has_value(); }
  ApiError take_error() { return std::move(*error_); }

 private:
  template <typename T>
  std::optional<T> keep(ApiResult<T> result);

  const Json& object_;
  std::string path_;
  std::optional<ApiError> error_;
};

}  // namespace pagoda::server
