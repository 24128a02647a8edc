// Chat messages: what OpenAI accepts, what it refuses (naming the field), and the shape
// they are handed to chat templates in.

#include <gtest/gtest.h>

#include <string>

#include "openai_test_util.h"
#include "server/openai/openai_request.h"

namespace pagoda::server {
namespace {

using testing::IsBadRequest;
using testing::Keys;
using testing::kVocab;

ApiResult<ChatCompletionRequest> WithMessages(std::string_view messages) {
  return parse_chat_completion_request(R"({"messages": )" + std::string(messages) + "}", kVocab);
}

TEST(OpenAIMessages, AConversationOfEveryRoleIsKeptAsGiven) {
  const std::string messages = R"([
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris?", "name": "ann"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "21 C"},
      {"role": "assistant", "content": "Sunny, 21 C.", "reasoning_content": "kept"}])";
  auto request = WithMessages(messages);
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->messages, Json::parse(messages));
}

TEST(OpenAIMessages, MessagesAreRequired) {
  auto request = parse_chat_completion_request(R"({"model": "m"})", kVocab);
  ASSERT_TRUE(IsBadRequest(request, "messages", "missing_required_parameter"));
  EXPECT_EQ(request.error().message, "Missing required parameter: 'messages'.");
  EXPECT_TRUE(IsBadRequest(WithMessages("null"), "messages", "missing_required_parameter"));
}

TEST(OpenAIMessages, AnEmptyConversationIsRefused) {
  auto request = WithMessages("[]");
  ASSERT_TRUE(IsBadRequest(request, "messages", "empty_array"));
  EXPECT_EQ(request.error().message,
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got "
            "an empty array instead.");
}

TEST(OpenAIMessages, MessagesMustBeAnArrayOfObjects) {
  EXPECT_TRUE(IsBadRequest(WithMessages(R"("hello")"), "messages", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(WithMessages(R"({"role": "user"})"), "messages", "invalid_type"));
  auto request = WithMessages(R"([{"role": "user", "content": "a"}, "b"])");
  ASSERT_TRUE(IsBadRequest(request, "messages[1]", "invalid_type"));
  EXPECT_EQ(request.error().message,
            "Invalid type for 'messages[1]': expected an object, but got a string instead.");
}

TEST(OpenAIMessages, EveryMessageNeedsAKnownRole) {
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"content": "a"}])"), "messages[0].role",
                           "missing_required_parameter"));
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": 1, "content": "a"}])"), "messages[0].role",
                           "invalid_type"));
  auto request =
      WithMessages(R"([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])");
  ASSERT_TRUE(IsBadRequest(request, "messages[1].role", "invalid_value"));
  EXPECT_EQ(request.error().message,
            "Invalid value: 'robot'. Supported values are: 'system', 'developer', 'user', "
            "'assistant', and 'tool'.");
}

TEST(OpenAIMessages, TextPartsAreJoinedIntoOneStringInPlace) {
  auto request = WithMessages(R"([{"content": [{"type": "text", "text": "First."},
      {"type": "text", "text": "Second."}], "role": "user", "name": "ann"}])");
  ASSERT_TRUE(request.ok()) << request.error().message;
  const Json& message = request->messages[0];
  EXPECT_EQ(message["content"], "First.\nSecond.");
  EXPECT_EQ(Keys(message), (std::vector<std::string>{"content", "role", "name"}));  // order kept
}

TEST(OpenAIMessages, ImagePartsAreNotSupported) {
  auto request = WithMessages(R"([{"role": "user", "content": [{"type": "text", "text": "What?"},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}])");
  ASSERT_TRUE(IsBadRequest(request, "messages[0].content[1].type", "invalid_value"));
  EXPECT_EQ(request.error().message,
            "Content parts of type 'image_url' are not supported: this server runs text-only "
            "models.");
  EXPECT_TRUE(IsBadRequest(
      WithMessages(
          R"([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}])"),
      "messages[0].content[0].type"));
}

TEST(OpenAIMessages, MalformedContentPartsAreNamed) {
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "user", "content": [{"type": "text"}]}])"),
                           "messages[0].content[0].text", "missing_required_parameter"));
  EXPECT_TRUE(
      IsBadRequest(WithMessages(R"([{"role": "user", "content": [{"type": "text", "text": 5}]}])"),
                   "messages[0].content[0].text", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "user", "content": [{"text": "a"}]}])"),
                           "messages[0].content[0].type", "missing_required_parameter"));
  auto unknown = WithMessages(R"([{"role": "user", "content": [{"type": "hologram"}]}])");
  ASSERT_TRUE(IsBadRequest(unknown, "messages[0].content[0].type", "invalid_value"));
  EXPECT_EQ(unknown.error().message, "Invalid value: 'hologram'. Supported values are: 'text'.");
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "user", "content": ["a"]}])"),
                           "messages[0].content[0]", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "user", "content": []}])"),
                           "messages[0].content", "empty_array"));
}

TEST(OpenAIMessages, ContentIsAStringOrAListOfParts) {
  auto request = WithMessages(R"([{"role": "user", "content": 42}])");
  ASSERT_TRUE(IsBadRequest(request, "messages[0].content", "invalid_type"));
  EXPECT_EQ(request.error().message,
            "Invalid type for 'messages[0].content': expected a string or an array of content "
            "parts, but got an integer instead.");
  EXPECT_TRUE(WithMessages(R"([{"role": "user", "content": ""}])").ok());  // empty text is text
}

TEST(OpenAIMessages, OnlyAnAssistantTurnOfToolCallsMayHaveNoContent) {
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "user"}])"), "messages[0].content",
                           "missing_required_parameter"));
  EXPECT_TRUE(
      IsBadRequest(WithMessages(R"([{"role": "user", "content": null}])"), "messages[0].content"));
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "assistant", "content": null}])"),
                           "messages[0].content", "missing_required_parameter"));
  auto request = WithMessages(R"([{"role": "assistant", "tool_calls": [
      {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}])");
  ASSERT_TRUE(request.ok()) << request.error().message;
  // The template sees content: None, as transformers passes an absent one.
  EXPECT_TRUE(request->messages[0]["content"].is_null());
}

TEST(OpenAIMessages, ToolCallsAreChecked) {
  EXPECT_TRUE(IsBadRequest(
      WithMessages(R"([{"role": "assistant", "content": null, "tool_calls": {"id": "c"}}])"),
      "messages[0].tool_calls", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(
      WithMessages(R"([{"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]}])"),
      "messages[0].tool_calls[0].function", "missing_required_parameter"));
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "assistant", "content": "",
      "tool_calls": [{"function": {"arguments": "{}"}}]}])"),
                           "messages[0].tool_calls[0].function.name",
                           "missing_required_parameter"));
  EXPECT_TRUE(
      IsBadRequest(WithMessages(R"([{"role": "assistant", "content": "", "tool_calls": [7]}])"),
                   "messages[0].tool_calls[0]", "invalid_type"));
}

TEST(OpenAIMessages, NameAndToolCallIdAreStrings) {
  EXPECT_TRUE(IsBadRequest(WithMessages(R"([{"role": "user", "content": "a", "name": 3}])"),
                           "messages[0].name", "invalid_type"));
  EXPECT_TRUE(
      IsBadRequest(WithMessages(R"([{"role": "tool", "content": "a", "tool_call_id": ["c"]}])"),
                   "messages[0].tool_call_id", "invalid_type"));
}

TEST(OpenAIMessages, DeveloperMessagesReachTemplatesAsSystemMessages) {
  auto request = WithMessages(R"([{"role": "developer", "content": "Rules."},
      {"role": "user", "content": "Hi"}])");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->messages[0], Json::parse(R"({"role": "system", "content": "Rules."})"));
}

}  // namespace
}  // namespace pagoda::server
