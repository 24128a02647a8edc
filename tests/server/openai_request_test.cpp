// Request parsing: the fields both endpoints share, their defaults, ranges and types,
// and what a body that is not usable JSON gets.

#include "server/openai/openai_request.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "openai_test_util.h"

namespace pagoda::server {
namespace {

using testing::IsBadRequest;
using testing::kVocab;

// A chat body with one user message and `fields` after it.
std::string ChatBody(std::string_view fields = {}) {
  std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "Hi"}])";
  if (!fields.empty()) body += ", " + std::string(fields);
  return body + "}";
}

ApiResult<ChatCompletionRequest> Chat(std::string_view fields = {}) {
  return parse_chat_completion_request(ChatBody(fields), kVocab);
}

TEST(OpenAIRequest, MinimalChatTakesOpenAIDefaults) {
  auto request = Chat();
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->model, "m");
  EXPECT_EQ(request->messages, Json::parse(R"([{"role": "user", "content": "Hi"}])"));
  const GenerationOptions& options = request->options;
  EXPECT_EQ(options.sampling.temperature, 1.0f);
  EXPECT_FALSE(options.sampling.greedy());
  EXPECT_EQ(options.sampling.top_p, 1.0f);
  EXPECT_EQ(options.sampling.top_k, 0);
  EXPECT_EQ(options.sampling.min_p, 0.0f);
  EXPECT_EQ(options.sampling.repetition_penalty, 1.0f);
  EXPECT_EQ(options.sampling.presence_penalty, 0.0f);
  EXPECT_EQ(options.sampling.frequency_penalty, 0.0f);
  EXPECT_TRUE(options.sampling.logit_bias.empty());
  EXPECT_FALSE(options.sampling.seed.has_value());
  EXPECT_FALSE(options.sampling.logprobs);
  EXPECT_FALSE(options.max_tokens.has_value());
  EXPECT_TRUE(options.stop.stop_strings.empty());
  EXPECT_FALSE(options.stop.ignore_eog);
  EXPECT_EQ(options.n, 1);
  EXPECT_FALSE(options.stream);
  EXPECT_FALSE(options.include_usage);
  EXPECT_TRUE(request->add_generation_prompt);
  EXPECT_EQ(request->chat_template_kwargs, Json::object());
}

TEST(OpenAIRequest, EveryFieldReachesTheEngineTypes) {
  auto request = Chat(R"("temperature": 0.5, "top_p": 0.9, "n": 3, "presence_penalty": -1.5,
      "frequency_penalty": 0.25, "logit_bias": {"42": -100, "7": 2.5}, "seed": 1234,
      "stop": ["\n\n", "END"], "max_tokens": 64, "stream": true,
      "stream_options": {"include_usage": true}, "user": "u-1", "top_k": 40, "min_p": 0.05,
      "repetition_penalty": 1.1, "ignore_eos": true, "logprobs": true, "top_logprobs": 3,
      "add_generation_prompt": false, "chat_template_kwargs": {"enable_thinking": false},
      "priority": -3)");
  ASSERT_TRUE(request.ok()) << request.error().message;
  const GenerationOptions& options = request->options;
  EXPECT_EQ(options.priority, -3);
  EXPECT_EQ(options.sampling.temperature, 0.5f);
  EXPECT_EQ(options.sampling.top_p, 0.9f);
  EXPECT_EQ(options.n, 3);
  EXPECT_EQ(options.sampling.presence_penalty, -1.5f);
  EXPECT_EQ(options.sampling.frequency_penalty, 0.25f);
  using Bias = std::vector<std::pair<int32_t, float>>;
  EXPECT_EQ(options.sampling.logit_bias, (Bias{{42, -100.0f}, {7, 2.5f}}));  // client order
  EXPECT_EQ(options.sampling.seed, std::optional<uint64_t>(1234));
  EXPECT_EQ(options.stop.stop_strings, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(options.max_tokens, std::optional<int32_t>(64));
  EXPECT_EQ(options.stop.max_tokens, 64);
  EXPECT_TRUE(options.stream);
  EXPECT_TRUE(options.include_usage);
  EXPECT_EQ(options.user, "u-1");
  EXPECT_EQ(options.sampling.top_k, 40);
  EXPECT_EQ(options.sampling.min_p, 0.05f);
  EXPECT_EQ(options.sampling.repetition_penalty, 1.1f);
  EXPECT_TRUE(options.stop.ignore_eog);
  EXPECT_TRUE(options.sampling.logprobs);
  EXPECT_EQ(options.sampling.top_logprobs, 3);
  EXPECT_FALSE(request->add_generation_prompt);
  EXPECT_EQ(request->chat_template_kwargs, Json::parse(R"({"enable_thinking": false})"));
}

TEST(OpenAIRequest, TemperatureZeroIsGreedy) {
  auto request = Chat(R"("temperature": 0)");
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->options.sampling.greedy());
}

TEST(OpenAIRequest, MaxCompletionTokensWinsOverMaxTokens) {
  auto request = Chat(R"("max_tokens": 100, "max_completion_tokens": 7)");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->options.max_tokens, std::optional<int32_t>(7));
  EXPECT_EQ(request->options.stop.max_tokens, 7);
  // ... but the deprecated one is still checked.
  EXPECT_TRUE(IsBadRequest(Chat(R"("max_tokens": 0, "max_completion_tokens": 7)"), "max_tokens"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("max_completion_tokens": 0)"), "max_completion_tokens",
                           "integer_below_min_value"));
}

TEST(OpenAIRequest, TemperatureAboveTwoIsRefusedInOpenAIWords) {
  auto request = Chat(R"("temperature": 2.5)");
  ASSERT_TRUE(IsBadRequest(request, "temperature", "decimal_above_max_value"));
  EXPECT_EQ(request.error().message,
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got "
            "2.5 instead.");
  EXPECT_TRUE(Chat(R"("temperature": 2)").ok());
}

TEST(OpenAIRequest, NegativeTemperatureIsRefused) {
  auto request = Chat(R"("temperature": -0.1)");
  ASSERT_TRUE(IsBadRequest(request, "temperature", "decimal_below_min_value"));
  EXPECT_EQ(request.error().message,
            "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got "
            "-0.1 instead.");
}

TEST(OpenAIRequest, AFieldOfTheWrongTypeIsNamed) {
  auto request = Chat(R"("temperature": "hot")");
  ASSERT_TRUE(IsBadRequest(request, "temperature", "invalid_type"));
  EXPECT_EQ(request.error().message,
            "Invalid type for 'temperature': expected a number, but got a string instead.");
  EXPECT_TRUE(IsBadRequest(Chat(R"("stream": 1)"), "stream", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("model": 7)"), "model", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("user": ["a"])"), "user", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("ignore_eos": "yes")"), "ignore_eos", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("priority": 1.5)"), "priority", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("priority": 3000000000)"), "priority"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("logprobs": 1)"), "logprobs", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("add_generation_prompt": 0)"), "add_generation_prompt"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("chat_template_kwargs": [1])"), "chat_template_kwargs"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("logit_bias": [1])"), "logit_bias", "invalid_type"));
}

TEST(OpenAIRequest, TopPExcludesZero) {
  auto request = Chat(R"("top_p": 0)");
  ASSERT_TRUE(IsBadRequest(request, "top_p", "decimal_below_min_value"));
  EXPECT_EQ(request.error().message,
            "Invalid 'top_p': decimal below minimum value. Expected a value > 0, but got 0 "
            "instead.");
  EXPECT_TRUE(IsBadRequest(Chat(R"("top_p": 1.01)"), "top_p", "decimal_above_max_value"));
  EXPECT_TRUE(Chat(R"("top_p": 1)").ok());
  EXPECT_TRUE(Chat(R"("top_p": 1e-9)").ok());
}

TEST(OpenAIRequest, NIsAnIntegerFromOneTo128) {
  auto zero = Chat(R"("n": 0)");
  ASSERT_TRUE(IsBadRequest(zero, "n", "integer_below_min_value"));
  EXPECT_EQ(zero.error().message,
            "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.");
  EXPECT_TRUE(IsBadRequest(Chat(R"("n": 129)"), "n", "integer_above_max_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("n": 2.5)"), "n", "invalid_type"));
  auto integral_decimal = Chat(R"("n": 2.0)");  // as Python validators take it
  ASSERT_TRUE(integral_decimal.ok());
  EXPECT_EQ(integral_decimal->options.n, 2);
  EXPECT_EQ(Chat(R"("n": 128)")->options.n, 128);
}

TEST(OpenAIRequest, PenaltiesAreWithinPlusMinusTwo) {
  EXPECT_TRUE(IsBadRequest(Chat(R"("presence_penalty": 2.01)"), "presence_penalty"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("frequency_penalty": -3)"), "frequency_penalty",
                           "decimal_below_min_value"));
  EXPECT_TRUE(Chat(R"("presence_penalty": -2, "frequency_penalty": 2)").ok());
}

TEST(OpenAIRequest, LogitBiasKeysAreTokenIdsOfTheVocabulary) {
  auto word = Chat(R"("logit_bias": {"hello": 1})");
  ASSERT_TRUE(IsBadRequest(word, "logit_bias", "invalid_value"));
  EXPECT_EQ(word.error().message, "Invalid key in 'logit_bias': 'hello' is not a token id.");
  auto outside = Chat(R"("logit_bias": {"1000": 1})");
  ASSERT_TRUE(IsBadRequest(outside, "logit_bias", "invalid_value"));
  EXPECT_EQ(outside.error().message,
            "Invalid key in 'logit_bias': '1000' is outside the vocabulary (ids 0 to 999).");
  EXPECT_TRUE(IsBadRequest(Chat(R"("logit_bias": {"-1": 1})"), "logit_bias"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("logit_bias": {"": 1})"), "logit_bias"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("logit_bias": {"12x": 1})"), "logit_bias"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("logit_bias": {"99999999999999999999": 1})"), "logit_bias"));
}

TEST(OpenAIRequest, LogitBiasValuesAreWithinPlusMinusHundred) {
  EXPECT_TRUE(
      IsBadRequest(Chat(R"("logit_bias": {"5": 101})"), "logit_bias.5", "decimal_above_max_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("logit_bias": {"5": "ban"})"), "logit_bias.5", "invalid_type"));
  auto request = Chat(R"("logit_bias": {"999": -100, "0": 100, "3": null})");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->options.sampling.logit_bias.size(), 2u);  // null: no bias
}

TEST(OpenAIRequest, NegativeSeedsMapToDistinctUnsignedSeeds) {
  auto minus_one = Chat(R"("seed": -1)");
  ASSERT_TRUE(minus_one.ok());
  EXPECT_EQ(minus_one->options.sampling.seed, std::optional<uint64_t>(UINT64_MAX));
  auto lowest = Chat(R"("seed": -9223372036854775808)");
  ASSERT_TRUE(lowest.ok());
  EXPECT_EQ(lowest->options.sampling.seed, std::optional<uint64_t>(uint64_t(1) << 63));
  EXPECT_EQ(Chat(R"("seed": 9223372036854775807)")->options.sampling.seed,
            std::optional<uint64_t>(INT64_MAX));
}

TEST(OpenAIRequest, SeedsOutsideSignedSixtyFourBitsAreRefused) {
  auto request = Chat(R"("seed": 9223372036854775808)");
  ASSERT_TRUE(IsBadRequest(request, "seed", "integer_above_max_value"));
  EXPECT_EQ(request.error().message,
            "Invalid 'seed': integer above maximum value. Expected a value <= "
            "9223372036854775807, but got 9223372036854775808 instead.");
  EXPECT_TRUE(IsBadRequest(Chat(R"("seed": 1e30)"), "seed", "integer_above_max_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("seed": -1e30)"), "seed", "integer_below_min_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("seed": "42")"), "seed", "invalid_type"));
}

TEST(OpenAIRequest, StopIsAStringOrUpToFourStrings) {
  auto one = Chat(R"("stop": "###")");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->options.stop.stop_strings, std::vector<std::string>{"###"});
  EXPECT_TRUE(Chat(R"("stop": [])")->options.stop.stop_strings.empty());
  auto five = Chat(R"("stop": ["a", "b", "c", "d", "e"])");
  ASSERT_TRUE(IsBadRequest(five, "stop", "array_above_max_length"));
  EXPECT_EQ(five.error().message,
            "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an "
            "array with length 5 instead.");
  EXPECT_TRUE(IsBadRequest(Chat(R"("stop": "")"), "stop", "empty_string"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("stop": ["a", ""])"), "stop[1]", "empty_string"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("stop": ["a", 3])"), "stop[1]", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("stop": 3)"), "stop", "invalid_type"));
}

TEST(OpenAIRequest, MaxTokensIsAtLeastOneAndFitsThirtyTwoBits) {
  EXPECT_TRUE(IsBadRequest(Chat(R"("max_tokens": 0)"), "max_tokens", "integer_below_min_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("max_tokens": -5)"), "max_tokens"));
  EXPECT_TRUE(
      IsBadRequest(Chat(R"("max_tokens": 2147483648)"), "max_tokens", "integer_above_max_value"));
  EXPECT_EQ(Chat(R"("max_tokens": 2147483647)")->options.max_tokens,
            std::optional<int32_t>(2147483647));
}

TEST(OpenAIRequest, StreamOptionsNeedStreaming) {
  auto request = Chat(R"("stream_options": {"include_usage": true})");
  ASSERT_TRUE(IsBadRequest(request, "stream_options", "invalid_value"));
  EXPECT_EQ(request.error().message,
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
  EXPECT_TRUE(IsBadRequest(Chat(R"("stream": false, "stream_options": {})"), "stream_options"));
  EXPECT_TRUE(Chat(R"("stream_options": null)").ok());
  auto without_usage = Chat(R"("stream": true, "stream_options": {})");
  ASSERT_TRUE(without_usage.ok());
  EXPECT_FALSE(without_usage->options.include_usage);
  EXPECT_TRUE(IsBadRequest(Chat(R"("stream": true, "stream_options": {"include_usage": "yes"})"),
                           "stream_options.include_usage", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("stream": true, "stream_options": true)"), "stream_options"));
}

TEST(OpenAIRequest, TopLogprobsNeedLogprobsAndStayWithinTwenty) {
  auto request = Chat(R"("top_logprobs": 2)");
  ASSERT_TRUE(IsBadRequest(request, "top_logprobs", "invalid_value"));
  EXPECT_EQ(request.error().message, "'top_logprobs' requires 'logprobs' to be set to true.");
  EXPECT_TRUE(Chat(R"("top_logprobs": 0)").ok());
  EXPECT_TRUE(IsBadRequest(Chat(R"("logprobs": true, "top_logprobs": 21)"), "top_logprobs",
                           "integer_above_max_value"));
  auto only_chosen = Chat(R"("logprobs": true)");
  ASSERT_TRUE(only_chosen.ok());
  EXPECT_TRUE(only_chosen->options.sampling.logprobs);
  EXPECT_EQ(only_chosen->options.sampling.top_logprobs, 0);
}

TEST(OpenAIRequest, TopLogprobsNeverExceedTheVocabulary) {
  auto request =
      parse_chat_completion_request(ChatBody(R"("logprobs": true, "top_logprobs": 20)"), 8);
  ASSERT_TRUE(IsBadRequest(request, "top_logprobs", "integer_above_max_value"));
  EXPECT_TRUE(
      parse_chat_completion_request(ChatBody(R"("logprobs": true, "top_logprobs": 8)"), 8).ok());
}

TEST(OpenAIRequest, VllmExtensionsAreChecked) {
  EXPECT_EQ(Chat(R"("top_k": -1)")->options.sampling.top_k, 0);  // -1: off
  EXPECT_TRUE(IsBadRequest(Chat(R"("top_k": -2)"), "top_k", "integer_below_min_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("top_k": 0.5)"), "top_k", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("min_p": 1.5)"), "min_p", "decimal_above_max_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("repetition_penalty": 0)"), "repetition_penalty",
                           "decimal_below_min_value"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("repetition_penalty": 1e300)"), "repetition_penalty"));
  EXPECT_FALSE(Chat(R"("ignore_eos": false)")->options.stop.ignore_eog);
}

TEST(OpenAIRequest, UnknownFieldsAreIgnored) {
  auto request = Chat(R"("functions": [{"type": "function"}], "store": true,
      "x-custom": [[[1]]], "metadata": null)");
  EXPECT_TRUE(request.ok()) << request.error().message;
}

TEST(OpenAIRequest, NullFieldsTakeTheirDefaults) {
  auto request = Chat(R"("temperature": null, "top_p": null, "n": null, "stop": null,
      "max_tokens": null, "seed": null, "logprobs": null, "stream": null, "model": null)");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->options.sampling.temperature, 1.0f);
  EXPECT_EQ(request->options.n, 1);
  EXPECT_FALSE(request->options.max_tokens.has_value());
  EXPECT_EQ(request->model, "");
}

TEST(OpenAIRequest, TheLastOfDuplicateKeysWins) {
  auto request = Chat(R"("temperature": 1.5, "temperature": 0.25)");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->options.sampling.temperature, 0.25f);
}

TEST(OpenAIRequest, MalformedJsonSaysWhereItBroke) {
  auto request = parse_chat_completion_request(R"({"messages": [}")", kVocab);
  ASSERT_TRUE(IsBadRequest(request, ""));
  EXPECT_EQ(request.error().message.rfind("invalid JSON: parse error at line 1, column 15", 0), 0u)
      << request.error().message;
  EXPECT_TRUE(IsBadRequest(parse_chat_completion_request("", kVocab), ""));
  EXPECT_TRUE(IsBadRequest(parse_completion_request("{\"prompt\": \"a\"} trailing", kVocab), ""));
}

TEST(OpenAIRequest, NumbersBeyondDoubleAndInvalidUtf8AreMalformedJson) {
  auto huge = Chat(R"("temperature": 1e400)");
  ASSERT_TRUE(IsBadRequest(huge, ""));
  EXPECT_NE(huge.error().message.find("number overflow"), std::string::npos);
  EXPECT_TRUE(
      IsBadRequest(parse_chat_completion_request(ChatBody("\"user\": \"\xff\""), kVocab), ""));
}

TEST(OpenAIRequest, ABodyThatIsNotAnObjectIsRefused) {
  auto request = parse_chat_completion_request("[1, 2]", kVocab);
  ASSERT_TRUE(IsBadRequest(request, ""));
  EXPECT_EQ(request.error().message, "The request body must be a JSON object, but got an array.");
  EXPECT_TRUE(IsBadRequest(parse_completion_request("\"text\"", kVocab), ""));
}

// `levels` arrays nested inside an unknown field of the top-level object.
std::string NestedBody(int levels) {
  return ChatBody("\"deep\": " + std::string(levels, '[') + std::string(levels, ']'));
}

TEST(OpenAIRequest, NestingIsLimitedToSixtyFourLevels) {
  // The top-level object is level 1.
  EXPECT_TRUE(parse_chat_completion_request(NestedBody(kMaxJsonDepth - 1), kVocab).ok());
  auto request = parse_chat_completion_request(NestedBody(kMaxJsonDepth), kVocab);
  ASSERT_TRUE(IsBadRequest(request, ""));
  EXPECT_EQ(request.error().message,
            "invalid JSON: arrays and objects nested deeper than 64 levels are not accepted");
}

TEST(OpenAIRequest, VeryDeepNestingFailsFastWithoutRecursion) {
  const std::string body = "{\"a\": " + std::string(1 << 20, '[');  // unterminated, too
  EXPECT_TRUE(IsBadRequest(parse_chat_completion_request(body, kVocab), ""));
  EXPECT_TRUE(IsBadRequest(parse_completion_request(std::string(1 << 20, '{'), kVocab), ""));
}

}  // namespace
}  // namespace pagoda::server
