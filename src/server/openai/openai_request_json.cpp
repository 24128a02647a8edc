#include "server/openai/openai_request_json.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <utility>

namespace pagoda::server {
namespace {

// Builds the document through nlohmann's own DOM builder, adding what json::parse lacks
// without exceptions: the parser's error message, and a refusal of deep nesting before
// the nested values exist (the parser itself is iterative, but every later walk over
// the document - copies, templates, tojson - recurses).
class BoundedDomBuilder {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

  explicit BoundedDomBuilder(Json& root) : dom_(root, /*allow_exceptions=*/false) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(Json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(Json::number_float_t value, const Json::string_t& text) {
    return dom_.number_float(value, text);
  }
  bool string(Json::string_t& value) { return dom_.string(value); }
  bool binary(Json::binary_t& value) { return dom_.binary(value); }
  bool key(Json::string_t& value) { return dom_.key(value); }
  bool start_object(std::size_t size) { return enter() && dom_.start_object(size); }
  bool start_array(std::size_t size) { return enter() && dom_.start_array(size); }
  bool end_object() { return leave() && dom_.end_object(); }
  bool end_array() { return leave() && dom_.end_array(); }

  template <typename Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const Exception& error) {
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
    std::string_view what = error.what();
    if (const size_t end = what.find("] ");
        what.starts_with("[json.exception.") && end != std::string_view::npos) {
      what.remove_prefix(end + 2);
    }
    message_ = "invalid JSON: " + std::string(what);
    return false;
  }

  const std::string& message() const { return message_; }

 private:
  bool enter() {
    if (++depth_ <= kMaxJsonDepth) return true;
    message_ = "invalid JSON: arrays and objects nested deeper than " +
               std::to_string(kMaxJsonDepth) + " levels are not accepted";
    return false;
  }
  bool leave() {
    --depth_;
    return true;
  }

  Base dom_;
  int depth_ = 0;
  std::string message_;
};

// Shortest text that reads back as `x` ("2", "0.5", "1e+30").
std::string format_number(double x) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

std::string_view type_phrase(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a decimal";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

// "Invalid 'p': decimal above maximum value. Expected a value <= 2, but got 3 instead."
ApiError out_of_range(const std::string& param, const Json& got, bool integer, bool above,
                      bool exclusive, const std::string& bound) {
  const char* kind = integer ? "integer" : "decimal";
  std::string message = "Invalid '" + param + "': " + kind +
                        (above ? " above maximum" : " below minimum") +
                        " value. Expected a value " + (above ? "<" : ">") + (exclusive ? "" : "=") +
                        " " + bound + ", but got " + got.dump() + " instead.";
  std::string code = std::string(kind) + (above ? "_above_max_value" : "_below_min_value");
  return bad_request(std::move(message), param, std::move(code));
}

}  // namespace

ApiResult<Json> parse_json_object(std::string_view body) {
  Json document;
  BoundedDomBuilder builder(document);
  if (!Json::sax_parse(body.begin(), body.end(), &builder)) {
    return bad_request(builder.message().empty() ? "invalid JSON" : builder.message());
  }
  if (!document.is_object()) {
    return bad_request("The request body must be a JSON object, but got " +
                       std::string(type_phrase(document)) + ".");
  }
  return document;
}

ApiError invalid_type(std::string param, std::string_view expected, const Json& got) {
  std::string message = "Invalid type for '" + param + "': expected " + std::string(expected) +
                        ", but got " + std::string(type_phrase(got)) + " instead.";
  return bad_request(std::move(message), std::move(param), "invalid_type");
}

ApiError missing_parameter(std::string param) {
  return bad_request("Missing required parameter: '" + param + "'.", param,
                     "missing_required_parameter");
}

ApiError empty_array(std::string param) {
  std::string message = "Invalid '" + param +
                        "': empty array. Expected an array with minimum length 1, but got an "
                        "empty array instead.";
  return bad_request(std::move(message), std::move(param), "empty_array");
}

ApiError empty_string(std::string param) {
  std::string message = "Invalid '" + param +
                        "': empty string. Expected a string with minimum length 1, but got an "
                        "empty string instead.";
  return bad_request(std::move(message), std::move(param), "empty_string");
}

ApiError invalid_value(std::string param, std::string_view message) {
  return bad_request(std::string(message), std::move(param), "invalid_value");
}

ApiResult<double> read_number(const Json& value, const std::string& param, NumberRange range) {
  if (!value.is_number()) return invalid_type(param, "a number", value);
  const double x = value.get<double>();
  if (x < range.min || (range.min_exclusive && x == range.min)) {
    return out_of_range(param, value, false, false, range.min_exclusive, format_number(range.min));
  }
  if (x > range.max || (range.max_exclusive && x == range.max)) {
    return out_of_range(param, value, false, true, range.max_exclusive, format_number(range.max));
  }
  return x;
}

ApiResult<int64_t> read_integer(const Json& value, const std::string& param, IntegerRange range) {
  constexpr double kTwoTo63 = 9223372036854775808.0;
  const std::string min = std::to_string(range.min);
  const std::string max = std::to_string(range.max);
  if (value.is_number_float()) {  // 2.0 is 2, as Python's validators take it
    const double x = value.get<double>();
    if (x != std::floor(x)) return invalid_type(param, "an integer", value);
    if (x >= kTwoTo63) return out_of_range(param, value, true, true, false, max);
    if (x < -kTwoTo63) return out_of_range(param, value, true, false, false, min);
  } else if (value.is_number_unsigned() &&
             value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) {
    return out_of_range(param, value, true, true, false, max);
  } else if (!value.is_number_integer()) {
    return invalid_type(param, "an integer", value);
  }
  const int64_t x = value.is_number_float() ? int64_t(value.get<double>()) : value.get<int64_t>();
  if (x < range.min) return out_of_range(param, value, true, false, false, min);
  if (x > range.max) return out_of_range(param, value, true, true, false, max);
  return x;
}

ApiResult<bool> read_bool(const Json& value, const std::string& param) {
  if (!value.is_boolean()) return invalid_type(param, "a boolean", value);
  return value.get<bool>();
}

ApiResult<std::string> read_string(const Json& value, const std::string& param) {
  if (!value.is_string()) return invalid_type(param, "a string", value);
  return value.get<std::string>();
}

FieldReader::FieldReader(const Json& object, std::string path)
    : object_(object), path_(std::move(path)) {}

const Json* FieldReader::find(std::string_view key) const {
  const auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string FieldReader::param(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

template <typename T>
std::optional<T> FieldReader::keep(ApiResult<T> result) {
  if (result.ok()) return std::move(result).value();
  fail(std::move(result).error());
  return std::nullopt;
}

std::optional<double> FieldReader::number(std::string_view key, NumberRange range) {
  const Json* value = ok() ? find(key) : nullptr;
  return value ? keep(read_number(*value, param(key), range)) : std::nullopt;
}

std::optional<int64_t> FieldReader::integer(std::string_view key, IntegerRange range) {
  const Json* value = ok() ? find(key) : nullptr;
  return value ? keep(read_integer(*value, param(key), range)) : std::nullopt;
}

std::optional<bool> FieldReader::boolean(std::string_view key) {
  const Json* value = ok() ? find(key) : nullptr;
  return value ? keep(read_bool(*value, param(key))) : std::nullopt;
}

std::optional<std::string> FieldReader::string(std::string_view key) {
  const Json* value = ok() ? find(key) : nullptr;
  return value ? keep(read_string(*value, param(key))) : std::nullopt;
}

const Json* FieldReader::object(std::string_view key) {
  const Json* value = ok() ? find(key) : nullptr;
  if (value && !value->is_object()) {
    fail(invalid_type(param(key), "an object", *value));
    return nullptr;
  }
  return value;
}

const Json* FieldReader::array(std::string_view key) {
  const Json* value = ok() ? find(key) : nullptr;
  if (value && !value->is_array()) {
    fail(invalid_type(param(key), "an array", *value));
    return nullptr;
  }
  return value;
}

void FieldReader::fail(ApiError error) {
  if (!error_) error_ = std::move(error);
}

}  // namespace pagoda::server
