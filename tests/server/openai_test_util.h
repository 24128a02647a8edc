#pragma once
// Helpers of the protocol tests: checking an ApiResult's error, and parsing output JSON.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "server/openai/api_error.h"
#include "server/openai/openai_request.h"

namespace pagoda::server::testing {

constexpr int32_t kVocab = 1000;  // token ids 0..999 are valid in these tests

// The result failed with a 400 invalid_request_error naming `param` (and `code`, when
// given).
template <typename T>
::testing::AssertionResult IsBadRequest(const ApiResult<T>& result, std::string_view param,
                                        std::string_view code = {}) {
  if (result.ok()) return ::testing::AssertionFailure() << "the request was accepted";
  const ApiError& error = result.error();
  if (error.status != 400 || error.type != "invalid_request_error" || error.param != param ||
      (!code.empty() && error.code != code) || error.message.empty()) {
    return ::testing::AssertionFailure()
           << "got status " << error.status << ", type '" << error.type << "', param '"
           << error.param << "', code '" << error.code << "', message: " << error.message;
  }
  return ::testing::AssertionSuccess();
}

// The message of a failed result ("" when it succeeded).
template <typename T>
std::string ErrorMessage(const ApiResult<T>& result) {
  return result.ok() ? std::string() : result.error().message;
}

inline Json ParseJson(std::string_view text) {
  return Json::parse(text);
}

// The keys of an object, in order.
inline std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

}  // namespace pagoda::server::testing
