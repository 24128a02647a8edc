#include "loadgen/openai_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::loadgen {
namespace {

using Json = nlohmann::json;

TEST(OpenAiStream, EndpointKind) {
  EXPECT_EQ(api_kind_of_endpoint("/v1/completions"), ApiKind::kCompletions);
  EXPECT_EQ(api_kind_of_endpoint("/v1/chat/completions"), ApiKind::kChatCompletions);
  EXPECT_EQ(api_kind_of_endpoint("/v1/chat/completions/"), ApiKind::kChatCompletions);
}

TEST(OpenAiStream, CompletionRequestBody) {
  const BenchPrompt prompt{"once upon", 32, 2};
  const Json body = Json::parse(stream_request_body(ApiKind::kCompletions, "m1", prompt));
  EXPECT_EQ(body["model"], "m1");
  EXPECT_EQ(body["prompt"], "once upon");
  EXPECT_EQ(body["max_tokens"], 32);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_FALSE(body.contains("messages"));
}

TEST(OpenAiStream, ChatRequestBodyHoldsOneUserMessage) {
  const BenchPrompt prompt{"hi \xff there", 8, 3};  // invalid UTF-8 is replaced, not thrown
  const Json body = Json::parse(stream_request_body(ApiKind::kChatCompletions, "m2", prompt));
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], "hi \xEF\xBF\xBD there");
  EXPECT_FALSE(body.contains("prompt"));
  EXPECT_EQ(body["max_tokens"], 8);
}

TEST(OpenAiStream, CompletionChunks) {
  const auto text = parse_stream_event(
      ApiKind::kCompletions, R"({"choices":[{"index":0,"text":" world","finish_reason":null}]})");
  EXPECT_EQ(text.text_bytes, 6u);
  EXPECT_FALSE(text.done || text.error || text.usage);

  const auto finish = parse_stream_event(
      ApiKind::kCompletions, R"({"choices":[{"index":0,"text":"","finish_reason":"length"}]})");
  EXPECT_EQ(finish.text_bytes, 0u);

  const auto usage = parse_stream_event(
      ApiKind::kCompletions,
      R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})");
  ASSERT_TRUE(usage.usage.has_value());
  EXPECT_EQ(usage.usage->prompt_tokens, 12);
  EXPECT_EQ(usage.usage->completion_tokens, 34);
  EXPECT_EQ(usage.text_bytes, 0u);

  EXPECT_TRUE(parse_stream_event(ApiKind::kCompletions, "[DONE]").done);
}

TEST(OpenAiStream, ChatChunks) {
  const auto role = parse_stream_event(
      ApiKind::kChatCompletions, R"({"choices":[{"delta":{"role":"assistant","content":""}}]})");
  EXPECT_EQ(role.text_bytes, 0u);
  const auto content =
      parse_stream_event(ApiKind::kChatCompletions, R"({"choices":[{"delta":{"content":"Hey"}}]})");
  EXPECT_EQ(content.text_bytes, 3u);
  const auto reasoning =
      parse_stream_event(ApiKind::kChatCompletions,
                         R"({"choices":[{"delta":{"content":null,"reasoning_content":"hm"}}]})");
  EXPECT_EQ(reasoning.text_bytes, 2u);
  // A completions-shaped chunk read as chat carries no chat text.
  EXPECT_EQ(
      parse_stream_event(ApiKind::kChatCompletions, R"({"choices":[{"text":"x"}]})").text_bytes,
      0u);
  const auto null_usage = parse_stream_event(
      ApiKind::kChatCompletions, R"({"choices":[{"delta":{"content":"a"}}],"usage":null})");
  EXPECT_FALSE(null_usage.usage.has_value());
}

TEST(OpenAiStream, ErrorsAndMalformedData) {
  const auto error = parse_stream_event(
      ApiKind::kCompletions, R"({"error":{"message":"out of memory","type":"server_error"}})");
  ASSERT_TRUE(error.error.has_value());
  EXPECT_EQ(*error.error, "out of memory");
  const auto string_error = parse_stream_event(ApiKind::kCompletions, R"({"error":"bad"})");
  EXPECT_EQ(string_error.error.value_or(""), "bad");
  EXPECT_TRUE(parse_stream_event(ApiKind::kCompletions, "{not json").error.has_value());
  EXPECT_TRUE(parse_stream_event(ApiKind::kCompletions, "[1,2]").error.has_value());
  // Wrong types are not text, and never throw.
  EXPECT_EQ(parse_stream_event(ApiKind::kCompletions, R"({"choices":[{"text":5}]})").text_bytes,
            0u);
  EXPECT_EQ(parse_stream_event(ApiKind::kCompletions, R"({"choices":"x"})").text_bytes, 0u);
  EXPECT_FALSE(parse_stream_event(ApiKind::kCompletions,
                                  R"({"usage":{"prompt_tokens":-1,"completion_tokens":2}})")
                   .usage.has_value());
}

TEST(OpenAiStream, WholeResponses) {
  const auto chat = parse_whole_response(
      ApiKind::kChatCompletions,
      R"({"choices":[{"message":{"role":"assistant","content":"four"}}],)"
      R"("usage":{"prompt_tokens":5,"completion_tokens":1}})");
  EXPECT_EQ(chat.text_bytes, 4u);
  ASSERT_TRUE(chat.usage.has_value());
  EXPECT_EQ(chat.usage->completion_tokens, 1);
  EXPECT_EQ(
      parse_whole_response(ApiKind::kCompletions, R"({"choices":[{"text":"abc"}]})").text_bytes,
      3u);
}

TEST(OpenAiStream, ErrorMessageOfBody) {
  EXPECT_EQ(error_message_of_body(R"({"error":{"message":"model not found","code":404}})"),
            "model not found");
  EXPECT_EQ(error_message_of_body(R"({"object":"error","message":"too long"})"), "too long");
  EXPECT_EQ(error_message_of_body(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(error_message_of_body("plain text\n"), "plain text");
  EXPECT_EQ(error_message_of_body(std::string(500, 'x')).size(), 200u);
}

}  // namespace
}  // namespace pagoda::loadgen
