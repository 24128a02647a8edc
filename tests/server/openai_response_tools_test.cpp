// Tool calls in responses: message.tool_calls (content null when the answer is only
// calls) and the streamed tool-call deltas, in OpenAI's shapes.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai_test_util.h"
#include "server/openai/openai_response.h"

namespace pagoda::server {
namespace {

using testing::Keys;
using testing::ParseJson;

ResponseContext Context(bool include_usage = false) {
  ResponseContext context;
  context.id = "chatcmpl-abc";
  context.created = 1700000000;
  context.model = "smol";
  context.include_usage = include_usage;
  return context;
}

TEST(OpenAIResponseTools, OnlyCallsHaveNullContent) {
  std::vector<CompletionChoiceResult> choices(1);
  choices[0].finish_reason = "tool_calls";
  choices[0].tool_calls = {{"call_a", "get_weather", R"({"city": "Paris"})"},
                           {"call_b", "add", "{}"}};
  const Json body = ParseJson(chat_completion_body(Context(), choices, {5, 7, 0}));
  const Json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(Keys(choice["message"]), (std::vector<std::string>{"role", "content", "tool_calls"}));
  EXPECT_EQ(choice["message"], ParseJson(R"({"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_a", "type": "function",
       "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
      {"id": "call_b", "type": "function", "function": {"name": "add", "arguments": "{}"}}]})"));
  EXPECT_EQ(Keys(choice["message"]["tool_calls"][0]),
            (std::vector<std::string>{"id", "type", "function"}));
  EXPECT_EQ(body["usage"]["completion_tokens"], 7);
}

TEST(OpenAIResponseTools, TextAndCallsKeepTheText) {
  std::vector<CompletionChoiceResult> choices(1);
  choices[0].text = "Let me look.";
  choices[0].finish_reason = "tool_calls";
  choices[0].tool_calls = {{"call_a", "f", "{}"}};
  const Json body = ParseJson(chat_completion_body(Context(), choices, {1, 1, 0}));
  EXPECT_EQ(body["choices"][0]["message"]["content"], "Let me look.");
  EXPECT_EQ(body["choices"][0]["message"]["tool_calls"].size(), 1u);
}

TEST(OpenAIResponseTools, NoCallsNoToolCallsKey) {
  std::vector<CompletionChoiceResult> choices(1);
  choices[0].finish_reason = "stop";
  const Json body = ParseJson(chat_completion_body(Context(), choices, {1, 1, 0}));
  EXPECT_EQ(body["choices"][0]["message"], ParseJson(R"({"role": "assistant", "content": ""})"));
}

TEST(OpenAIResponseTools, StreamedCallPieces) {
  const Json first = ParseJson(
      chat_tool_call_chunk(Context(), 2, ToolCallChunk{1, "call_x", "get_weather", ""}));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"], ParseJson(R"([{"index": 2, "delta": {"tool_calls": [{"index": 1,
      "id": "call_x", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]},
      "logprobs": null, "finish_reason": null}])"));
  EXPECT_EQ(Keys(first["choices"][0]["delta"]["tool_calls"][0]),
            (std::vector<std::string>{"index", "id", "type", "function"}));
  const Json piece =
      ParseJson(chat_tool_call_chunk(Context(true), 0, ToolCallChunk{1, "", "", "{\"ci"}));
  EXPECT_EQ(piece["choices"][0]["delta"],
            ParseJson(R"({"tool_calls": [{"index": 1, "function": {"arguments": "{\"ci"}}]})"));
  EXPECT_TRUE(piece.contains("usage"));
  EXPECT_TRUE(piece["usage"].is_null());
  EXPECT_EQ(ParseJson(chat_finish_chunk(Context(), 0, "tool_calls"))["choices"][0]["finish_reason"],
            "tool_calls");
}

}  // namespace
}  // namespace pagoda::server
