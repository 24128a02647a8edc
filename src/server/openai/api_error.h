#pragma once
// Errors as the OpenAI API reports them: an HTTP status and a JSON body
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature",
//              "code": "decimal_above_max_value"}}
// (param and code are null when empty). Types and codes are OpenAI's own: clients such as
// the official SDKs map the status to an exception class and show `message`.
//
// ApiResult<T> is the protocol layer's Expected: a T, or the ApiError to send instead.
// Nothing here throws.

#include <string>
#include <string_view>

#include "core/status.h"

namespace pagoda::server {

struct ApiError {
  int status = 400;  // HTTP status: 400 401 404 405 413 429 500 503
  std::string message;
  std::string type = "invalid_request_error";  // OpenAI's error type
  std::string param;  // the request field at fault ("messages[1].content"); empty -> null
  std::string code;   // OpenAI's machine-readable code ("invalid_type"); empty -> null
};

// {"error":{"message":..,"type":..,"param":..,"code":..}}. Never throws: text that is not
// valid UTF-8 (a client's bytes quoted in a message) is written with U+FFFD in its place.
std::string error_body(const ApiError& error);

// 400 invalid_request_error.
ApiError bad_request(std::string message, std::string param = {}, std::string code = {});
// 401: a missing or wrong API key (OpenAI: invalid_request_error, code invalid_api_key).
ApiError unauthorized(std::string message);
// 404 for a model the server does not serve: "The model `x` does not exist." (param
// "model", code "model_not_found").
ApiError model_not_found(std::string_view model);
// 404 for a path no endpoint serves: "Invalid URL (POST /v1/nope)".
ApiError unknown_url(std::string_view method, std::string_view target);
// 405: the path exists but not for this method.
ApiError method_not_allowed(std::string_view method, std::string_view target);
// 413: the body is over the server's limit.
ApiError payload_too_large(std::size_t limit_bytes);
// 429 (OpenAI: type "requests", code "rate_limit_exceeded"); the caller adds Retry-After.
ApiError rate_limited(std::string message);
// 500 server_error: a failure on our side; the message says what failed.
ApiError internal_error(std::string message);
// 503 server_error: busy or not ready (queue full, loading, shutting down).
ApiError service_unavailable(std::string message);

// A library Status as an API error: kInvalidArgument -> 400, kNotFound -> 404,
// kResourceExhausted -> 503, everything else -> 500. `status` must not be ok.
ApiError api_error_from_status(const Status& status, std::string param = {});

// A T, or the ApiError that stands for it (error()).
template <typename T>
using ApiResult = Expected<T, ApiError>;

}  // namespace pagoda::server
