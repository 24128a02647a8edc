// Whole responses and error bodies, compared as JSON with OpenAI's shapes (and the order
// of the keys clients print first).

#include "server/openai/openai_response.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "openai_test_util.h"
#include "server/openai/api_error.h"
#include "server/openai/openai_response_parts.h"

namespace pagoda::server {
namespace {

using testing::Keys;
using testing::ParseJson;

// Token i's text in these tests: "t<i>", except a few chosen to exercise encodings.
std::string PieceText(int32_t token) {
  switch (token) {
    case 1:
      return "H\xc3\xa9";  // "Hé": 3 bytes, 2 code points
    case 2:
      return "\xe2\x82";  // the first two bytes of "€": not valid UTF-8 alone
    case 3:
      return "\xac";  // ... and its last byte
    case 4:
      return "t";  // same text as token 5
    case 5:
      return "t";
    default:
      return "t" + std::to_string(token);
  }
}

ResponseContext Context(bool logprobs = false) {
  ResponseContext context;
  context.id = "chatcmpl-abc";
  context.created = 1700000000;
  context.model = "smol";
  context.logprobs = logprobs;
  context.token_text = PieceText;
  return context;
}

engine::TokenLogprobs Step(int32_t token, float logprob,
                           std::vector<engine::TokenLogprob> top = {}) {
  return engine::TokenLogprobs{token, logprob, std::move(top)};
}

TEST(OpenAIResponse, ChatCompletionBodyHasOpenAIsShapeAndKeyOrder) {
  std::vector<CompletionChoiceResult> choices(2);
  choices[0] = {0, "Hello!", "stop", {}, {10, 11}, {}};
  choices[1] = {1, "Hi", "length", {}, {12}, {}};
  const Json body = ParseJson(chat_completion_body(Context(), choices, {9, 3, 4}));
  EXPECT_EQ(body, ParseJson(R"({
      "id": "chatcmpl-abc", "object": "chat.completion", "created": 1700000000, "model": "smol",
      "system_fingerprint": null,
      "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello!"}, "logprobs": null,
         "finish_reason": "stop"},
        {"index": 1, "message": {"role": "assistant", "content": "Hi"}, "logprobs": null,
         "finish_reason": "length"}],
      "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12,
                "prompt_tokens_details": {"cached_tokens": 4}}})"));
  EXPECT_EQ(Keys(body), (std::vector<std::string>{"id", "object", "created", "model",
                                                  "system_fingerprint", "choices", "usage"}));
  EXPECT_EQ(Keys(body["choices"][0]),
            (std::vector<std::string>{"index", "message", "logprobs", "finish_reason"}));
  EXPECT_EQ(Keys(body["choices"][0]["message"]), (std::vector<std::string>{"role", "content"}));
}

TEST(OpenAIResponse, AnAbortedChoiceSaysAbort) {
  std::vector<CompletionChoiceResult> choices = {{0, "partial", "abort", {}, {}, {}}};
  const Json body = ParseJson(chat_completion_body(Context(), choices, {1, 1, 0}));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "abort");
}

TEST(OpenAIResponse, ChatLogprobsCarryTokenTextBytesAndAlternatives) {
  std::vector<CompletionChoiceResult> choices(1);
  choices[0] = {0,
                "H\xc3\xa9t7",
                "stop",
                {Step(1, -0.1f, {{1, -0.1f}, {7, -2.5f}}), Step(7, -INFINITY, {})},
                {1, 7}, {}};
  const Json body = ParseJson(chat_completion_body(Context(true), choices, {2, 2, 0}));
  EXPECT_EQ(body["choices"][0]["logprobs"], ParseJson(R"({"content": [
      {"token": "H\u00e9", "logprob": -0.1, "bytes": [72, 195, 169], "top_logprobs": [
          {"token": "H\u00e9", "logprob": -0.1, "bytes": [72, 195, 169]},
          {"token": "t7", "logprob": -2.5, "bytes": [116, 55]}]},
      {"token": "t7", "logprob": -9999.0, "bytes": [116, 55], "top_logprobs": []}]})"));
  EXPECT_EQ(Keys(body["choices"][0]["logprobs"]["content"][0]),
            (std::vector<std::string>{"token", "logprob", "bytes", "top_logprobs"}));
}

TEST(OpenAIResponse, PartialCharacterTokensKeepTheirExactBytes) {
  std::vector<CompletionChoiceResult> choices = {
      {0, "\xe2\x82\xac", "stop", {Step(2, -1.0f), Step(3, -0.5f)}, {2, 3}, {}}};
  const std::string text = chat_completion_body(Context(true), choices, {1, 2, 0});
  const Json body = ParseJson(text);  // valid JSON although the tokens are not valid UTF-8
  const Json& content = body["choices"][0]["logprobs"]["content"];
  EXPECT_EQ(content[0]["token"], "\xef\xbf\xbd");  // U+FFFD for the broken character
  EXPECT_EQ(content[1]["token"], "\xef\xbf\xbd");
  EXPECT_EQ(content[0]["bytes"], ParseJson("[226, 130]"));
  EXPECT_EQ(content[1]["bytes"], ParseJson("[172]"));
  EXPECT_EQ(body["choices"][0]["message"]["content"], "\xe2\x82\xac");
}

TEST(OpenAIResponse, LogprobsAreWrittenAsTheShortestFloatText) {
  EXPECT_EQ(logprob_value(-0.1f), -0.1);
  EXPECT_EQ(static_cast<float>(logprob_value(-1.2345678f)), -1.2345678f);  // round-trips
  EXPECT_EQ(logprob_value(0.0f), 0.0);
  EXPECT_EQ(logprob_value(-INFINITY), -9999.0);
  EXPECT_EQ(logprob_value(NAN), -9999.0);
  EXPECT_EQ(logprob_value(-1e6f), -9999.0);
  std::vector<CompletionChoiceResult> choices = {{0, "t9", "stop", {Step(9, -0.3f)}, {9}, {}}};
  const std::string text = chat_completion_body(Context(true), choices, {1, 1, 0});
  EXPECT_NE(text.find("\"logprob\":-0.3,"), std::string::npos) << text;
}

TEST(OpenAIResponse, CompletionBodyHasOpenAIsShape) {
  ResponseContext context = Context();
  context.id = "cmpl-xyz";
  std::vector<CompletionChoiceResult> choices = {{0, " there", "length", {}, {5}, {}}};
  const Json body = ParseJson(completion_body(context, choices, {4, 1, 0}));
  EXPECT_EQ(body, ParseJson(R"({
      "id": "cmpl-xyz", "object": "text_completion", "created": 1700000000, "model": "smol",
      "system_fingerprint": null,
      "choices": [{"text": " there", "index": 0, "logprobs": null, "finish_reason": "length"}],
      "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 0}}})"));
  EXPECT_EQ(Keys(body["choices"][0]),
            (std::vector<std::string>{"text", "index", "logprobs", "finish_reason"}));
}

TEST(OpenAIResponse, CompletionLogprobsAreParallelListsWithCodePointOffsets) {
  std::vector<CompletionChoiceResult> choices = {
      {0,
       "H\xc3\xa9t7t",
       "stop",
       {Step(1, -0.5f, {{7, -0.25f}, {1, -0.5f}}), Step(7, -1.0f, {{4, -0.75f}, {7, -1.0f}}),
        Step(4, -0.75f, {{4, -0.75f}, {5, -2.0f}})},
       {1, 7, 4}, {}}};
  const Json body = ParseJson(completion_body(Context(true), choices, {3, 3, 0}));
  // The chosen token first, then the alternatives; tokens 4 and 5 share the text "t" and
  // the first (more likely) one is kept.
  EXPECT_EQ(body["choices"][0]["logprobs"], ParseJson(R"({
      "tokens": ["H\u00e9", "t7", "t"],
      "token_logprobs": [-0.5, -1.0, -0.75],
      "top_logprobs": [{"H\u00e9": -0.5, "t7": -0.25}, {"t7": -1.0, "t": -0.75}, {"t": -0.75}],
      "text_offset": [0, 2, 4]})"));
  EXPECT_EQ(Keys(body["choices"][0]["logprobs"]),
            (std::vector<std::string>{"tokens", "token_logprobs", "top_logprobs", "text_offset"}));
  EXPECT_EQ(Keys(body["choices"][0]["logprobs"]["top_logprobs"][0]),
            (std::vector<std::string>{"H\u00e9", "t7"}));
}

TEST(OpenAIResponse, CompletionTopLogprobKeysNeverCollideAfterReplacement) {
  // Tokens 2 and 3 are both written as U+FFFD: the object holds that key once, with the
  // chosen token's value, instead of twice.
  std::vector<CompletionChoiceResult> choices = {
      {0, "", "stop", {Step(2, -1.0f, {{3, -0.5f}, {2, -1.0f}})}, {2}, {}}};
  const std::string text = completion_body(Context(true), choices, {1, 1, 0});
  EXPECT_EQ(text.find("\"\xef\xbf\xbd\":-1.0"), text.rfind("\"\xef\xbf\xbd\":"));
  const Json top = ParseJson(text)["choices"][0]["logprobs"]["top_logprobs"][0];
  EXPECT_EQ(top, ParseJson(R"({"\ufffd": -1.0})"));
}

TEST(OpenAIResponse, ModelsAreListedAsOpenAIDoes) {
  std::vector<ModelCard> models = {{"smol", 1700000000, "pagoda", 8192}};
  EXPECT_EQ(ParseJson(models_body(models)), ParseJson(R"({"object": "list", "data": [
      {"id": "smol", "object": "model", "created": 1700000000, "owned_by": "pagoda",
       "max_model_len": 8192}]})"));
  EXPECT_EQ(ParseJson(model_body(models[0])), ParseJson(models_body(models))["data"][0]);
  EXPECT_EQ(ParseJson(models_body({})), ParseJson(R"({"object": "list", "data": []})"));
}

TEST(OpenAIResponse, ResponseIdsArePrefixAndThirtyTwoHexDigits) {
  EXPECT_EQ(response_id("chatcmpl-", 0x0123456789abcdefULL, 0xfULL),
            "chatcmpl-0123456789abcdef000000000000000f");
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const std::string id = random_response_id("cmpl-");
    ASSERT_EQ(id.size(), 5u + 32u);
    ASSERT_EQ(id.find_first_not_of("0123456789abcdef", 5), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 100u);
}

TEST(OpenAIResponse, Utf8LengthCountsCodePoints) {
  EXPECT_EQ(utf8_length(""), 0);
  EXPECT_EQ(utf8_length("abc"), 3);
  EXPECT_EQ(utf8_length("H\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"), 4);  // H é € 😀
  EXPECT_EQ(utf8_length("\xac"), 0);  // a lone continuation byte continues a character
}

TEST(ApiError, ErrorBodyHasOpenAIsShapeWithNulls) {
  const Json body = ParseJson(
      error_body(bad_request("Bad temperature.", "temperature", "decimal_above_max_value")));
  EXPECT_EQ(body, ParseJson(R"({"error": {"message": "Bad temperature.",
      "type": "invalid_request_error", "param": "temperature",
      "code": "decimal_above_max_value"}})"));
  EXPECT_EQ(Keys(body["error"]), (std::vector<std::string>{"message", "type", "param", "code"}));
  EXPECT_EQ(ParseJson(error_body(internal_error("boom"))),
            ParseJson(R"({"error": {"message": "boom", "type": "server_error", "param": null,
                          "code": null}})"));
}

TEST(ApiError, ErrorBodyNeverThrowsOnInvalidUtf8) {
  const ApiError error = model_not_found("bad\xff");
  const Json body = ParseJson(error_body(error));
  EXPECT_EQ(body["error"]["message"], "The model `bad\xef\xbf\xbd` does not exist.");
}

TEST(ApiError, HelpersUseOpenAIsStatusesTypesAndCodes) {
  const ApiError key = unauthorized("Incorrect API key provided.");
  EXPECT_EQ(key.status, 401);
  EXPECT_EQ(key.type, "invalid_request_error");
  EXPECT_EQ(key.code, "invalid_api_key");
  const ApiError model = model_not_found("gpt-9");
  EXPECT_EQ(model.status, 404);
  EXPECT_EQ(model.message, "The model `gpt-9` does not exist.");
  EXPECT_EQ(model.param, "model");
  EXPECT_EQ(model.code, "model_not_found");
  EXPECT_EQ(unknown_url("POST", "/v1/nope").message, "Invalid URL (POST /v1/nope)");
  EXPECT_EQ(unknown_url("POST", "/v1/nope").status, 404);
  EXPECT_EQ(method_not_allowed("GET", "/v1/completions").status, 405);
  EXPECT_EQ(payload_too_large(1024).status, 413);
  EXPECT_EQ(payload_too_large(1024).message,
            "The request body is too large: the limit is 1024 bytes.");
  const ApiError limited = rate_limited("Slow down.");
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.code, "rate_limit_exceeded");
  EXPECT_EQ(service_unavailable("Queue full.").status, 503);
  EXPECT_EQ(service_unavailable("Queue full.").type, "server_error");
}

TEST(ApiError, StatusesMapToHttpStatuses) {
  EXPECT_EQ(api_error_from_status(invalid_argument("x"), "p").status, 400);
  EXPECT_EQ(api_error_from_status(invalid_argument("x"), "p").param, "p");
  EXPECT_EQ(api_error_from_status(not_found("x")).status, 404);
  EXPECT_EQ(api_error_from_status(resource_exhausted("x")).status, 503);
  EXPECT_EQ(api_error_from_status(io_error("x")).status, 500);
  EXPECT_EQ(api_error_from_status(io_error("disk")).message, "disk");
}

}  // namespace
}  // namespace pagoda::server
