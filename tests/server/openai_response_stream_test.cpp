// Streaming payloads: the chunk sequence OpenAI's clients expect, compared as JSON.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai_test_util.h"
#include "server/openai/openai_response.h"

namespace pagoda::server {
namespace {

using testing::Keys;
using testing::ParseJson;

ResponseContext Context(bool include_usage = false, bool logprobs = false) {
  ResponseContext context;
  context.id = "chatcmpl-1";
  context.created = 1700000001;
  context.model = "smol";
  context.include_usage = include_usage;
  context.logprobs = logprobs;
  context.token_text = [](int32_t token) {
    return token == 1 ? std::string("\xc3\xa9t") : "w" + std::to_string(token);
  };
  return context;
}

TEST(OpenAIStream, ChatChunksFollowOpenAIsSequence) {
  const ResponseContext context = Context();
  EXPECT_EQ(ParseJson(chat_role_chunk(context, 0)), ParseJson(R"({"id": "chatcmpl-1",
      "object": "chat.completion.chunk", "created": 1700000001, "model": "smol", "choices": [
      {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
       "finish_reason": null}]})"));
  EXPECT_EQ(ParseJson(chat_content_chunk(context, 0, "Hel")), ParseJson(R"({"id": "chatcmpl-1",
      "object": "chat.completion.chunk", "created": 1700000001, "model": "smol", "choices": [
      {"index": 0, "delta": {"content": "Hel"}, "logprobs": null, "finish_reason": null}]})"));
  EXPECT_EQ(ParseJson(chat_finish_chunk(context, 0, "stop")), ParseJson(R"({"id": "chatcmpl-1",
      "object": "chat.completion.chunk", "created": 1700000001, "model": "smol", "choices": [
      {"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}]})"));
}

TEST(OpenAIStream, ChunksStartWithTheEnvelopeKeys) {
  const Json chunk = ParseJson(chat_content_chunk(Context(true), 0, "x"));
  EXPECT_EQ(Keys(chunk),
            (std::vector<std::string>{"id", "object", "created", "model", "choices", "usage"}));
  EXPECT_EQ(Keys(chunk["choices"][0]),
            (std::vector<std::string>{"index", "delta", "logprobs", "finish_reason"}));
}

TEST(OpenAIStream, EachChoiceIsNamedByItsIndex) {
  const Json chunk = ParseJson(chat_finish_chunk(Context(), 3, "length"));
  EXPECT_EQ(chunk["choices"][0]["index"], 3);
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(ParseJson(chat_role_chunk(Context(), 2))["choices"][0]["index"], 2);
}

TEST(OpenAIStream, WithoutIncludeUsageChunksHaveNoUsageKey) {
  EXPECT_FALSE(ParseJson(chat_role_chunk(Context(), 0)).contains("usage"));
  EXPECT_FALSE(ParseJson(chat_content_chunk(Context(), 0, "a")).contains("usage"));
  EXPECT_FALSE(ParseJson(chat_finish_chunk(Context(), 0, "stop")).contains("usage"));
  int32_t offset = 0;
  EXPECT_FALSE(ParseJson(completion_text_chunk(Context(), 0, "a", {}, offset)).contains("usage"));
}

TEST(OpenAIStream, WithIncludeUsageEveryChunkSaysUsageNull) {
  const ResponseContext context = Context(true);
  for (const std::string& payload :
       {chat_role_chunk(context, 0), chat_content_chunk(context, 0, "a"),
        chat_finish_chunk(context, 0, "stop"), completion_finish_chunk(context, 0, "stop")}) {
    const Json chunk = ParseJson(payload);
    ASSERT_TRUE(chunk.contains("usage")) << payload;
    EXPECT_TRUE(chunk["usage"].is_null()) << payload;
  }
}

TEST(OpenAIStream, TheUsageChunkHasNoChoices) {
  EXPECT_EQ(ParseJson(chat_usage_chunk(Context(true), {12, 5, 8})), ParseJson(R"({
      "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000001,
      "model": "smol", "choices": [],
      "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
                "prompt_tokens_details": {"cached_tokens": 8}}})"));
  const Json completion = ParseJson(completion_usage_chunk(Context(true), {1, 2, 0}));
  EXPECT_EQ(completion["object"], "text_completion");
  EXPECT_EQ(completion["choices"], Json::array());
  EXPECT_EQ(completion["usage"]["total_tokens"], 3);
}

TEST(OpenAIStream, ContentChunksCarryTheirTokensLogprobs) {
  const std::vector<engine::TokenLogprobs> logprobs = {{1, -0.5f, {{1, -0.5f}, {4, -1.25f}}},
                                                       {9, -0.25f, {}}};
  const Json chunk =
      ParseJson(chat_content_chunk(Context(false, true), 0, "\xc3\xa9tw9", logprobs));
  EXPECT_EQ(chunk["choices"][0]["logprobs"], ParseJson(R"({"content": [
      {"token": "\u00e9t", "logprob": -0.5, "bytes": [195, 169, 116], "top_logprobs": [
          {"token": "\u00e9t", "logprob": -0.5, "bytes": [195, 169, 116]},
          {"token": "w4", "logprob": -1.25, "bytes": [119, 52]}]},
      {"token": "w9", "logprob": -0.25, "bytes": [119, 57], "top_logprobs": []}]})"));
  // The role and finish chunks carry none.
  EXPECT_TRUE(
      ParseJson(chat_role_chunk(Context(false, true), 0))["choices"][0]["logprobs"].is_null());
  // A chunk of held-back text releasing no token still has the logprobs object.
  EXPECT_EQ(ParseJson(chat_content_chunk(Context(false, true), 0, "x"))["choices"][0]["logprobs"],
            ParseJson(R"({"content": []})"));
}

TEST(OpenAIStream, CompletionChunksFollowOpenAIsShape) {
  ResponseContext context = Context();
  context.id = "cmpl-1";
  int32_t offset = 0;
  EXPECT_EQ(ParseJson(completion_text_chunk(context, 1, " world", {}, offset)),
            ParseJson(R"({"id": "cmpl-1", "object": "text_completion", "created": 1700000001,
                "model": "smol", "choices": [{"text": " world", "index": 1, "logprobs": null,
                "finish_reason": null}]})"));
  EXPECT_EQ(ParseJson(completion_finish_chunk(context, 1, "stop")),
            ParseJson(R"({"id": "cmpl-1", "object": "text_completion", "created": 1700000001,
                "model": "smol", "choices": [{"text": "", "index": 1, "logprobs": null,
                "finish_reason": "stop"}]})"));
}

TEST(OpenAIStream, CompletionOffsetsContinueAcrossChunks) {
  const ResponseContext context = Context(false, true);
  int32_t offset = 0;
  const Json first = ParseJson(completion_text_chunk(
      context, 0, "\xc3\xa9tw2", std::vector<engine::TokenLogprobs>{{1, -1.0f, {}}, {2, -2.0f, {}}},
      offset));
  EXPECT_EQ(first["choices"][0]["logprobs"], ParseJson(R"({"tokens": ["\u00e9t", "w2"],
      "token_logprobs": [-1.0, -2.0], "top_logprobs": [{"\u00e9t": -1.0}, {"w2": -2.0}],
      "text_offset": [0, 2]})"));
  EXPECT_EQ(offset, 4);
  const Json second = ParseJson(completion_text_chunk(
      context, 0, "w3", std::vector<engine::TokenLogprobs>{{3, -3.0f, {{5, -0.5f}}}}, offset));
  EXPECT_EQ(second["choices"][0]["logprobs"]["text_offset"], ParseJson("[4]"));
  EXPECT_EQ(second["choices"][0]["logprobs"]["top_logprobs"],
            ParseJson(R"([{"w3": -3.0, "w5": -0.5}])"));
  EXPECT_EQ(offset, 6);
}

}  // namespace
}  // namespace pagoda::server
