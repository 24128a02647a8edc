#include "server/openai/api_error.h"

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

using Json = nlohmann::ordered_json;

Json string_or_null(const std::string& text) {
  return text.empty() ? Json(nullptr) : Json(text);
}

ApiError make_error(int status, std::string message, std::string type, std::string param = {},
                    std::string code = {}) {
  return ApiError{status, std::move(message), std::move(type), std::move(param), std::move(code)};
}

}  // namespace

std::string error_body(const ApiError& error) {
  Json inner = Json::object();
  inner["message"] = error.message;
  inner["type"] = error.type;
  inner["param"] = string_or_null(error.param);
  inner["code"] = string_or_null(error.code);
  Json body = Json::object();
  body["error"] = std::move(inner);
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  return make_error(400, std::move(message), "invalid_request_error", std::move(param),
                    std::move(code));
}

ApiError unauthorized(std::string message) {
  return make_error(401, std::move(message), "invalid_request_error", {}, "invalid_api_key");
}

ApiError model_not_found(std::string_view model) {
  return make_error(404, "The model `" + std::string(model) + "` does not exist.",
                    "invalid_request_error", "model", "model_not_found");
}

ApiError unknown_url(std::string_view method, std::string_view target) {
  return make_error(404, "Invalid URL (" + std::string(method) + " " + std::string(target) + ")",
                    "invalid_request_error");
}

ApiError method_not_allowed(std::string_view method, std::string_view target) {
  return make_error(
      405, "Method " + std::string(method) + " is not allowed for " + std::string(target) + ".",
      "invalid_request_error", {}, "method_not_allowed");
}

ApiError payload_too_large(std::size_t limit_bytes) {
  return make_error(
      413, "The request body is too large: the limit is " + std::to_string(limit_bytes) + " bytes.",
      "invalid_request_error", {}, "request_too_large");
}

ApiError rate_limited(std::string message) {
  return make_error(429, std::move(message), "requests", {}, "rate_limit_exceeded");
}

ApiError internal_error(std::string message) {
  return make_error(500, std::move(message), "server_error");
}

ApiError service_unavailable(std::string message) {
  return make_error(503, std::move(message), "server_error");
}

ApiError api_error_from_status(const Status& status, std::string param) {
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
      return bad_request(status.message(), std::move(param));
    case ErrorCode::kNotFound:
      return make_error(404, status.message(), "invalid_request_error", std::move(param));
    case ErrorCode::kResourceExhausted:
      return service_unavailable(status.message());
    default:
      return internal_error(status.message());
  }
}

}  // namespace pagoda::server
