// Request parsing: chat's tools, tool_choice and parallel_tool_calls, and their errors.

#include <gtest/gtest.h>

#include <string>

#include "openai_test_util.h"
#include "server/openai/openai_request.h"

namespace pagoda::server {
namespace {

using testing::ErrorMessage;
using testing::IsBadRequest;
using testing::kVocab;

constexpr std::string_view kWeather =
    R"({"type": "function", "function": {"name": "get_weather", "description": "The weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}})";
constexpr std::string_view kTime = R"({"type": "function", "function": {"name": "get-time"}})";

ApiResult<ChatCompletionRequest> Chat(std::string_view fields) {
  std::string body = R"({"messages": [{"role": "user", "content": "Hi"}], )";
  return parse_chat_completion_request(body + std::string(fields) + "}", kVocab);
}

std::string Tools(std::string_view list = {}) {
  return R"("tools": [)" + std::string(list.empty() ? kWeather : list) + "]";
}

TEST(OpenAIRequestTools, NoToolsByDefault) {
  auto request = Chat(R"("n": 1)");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(request->tools.empty());
  EXPECT_EQ(request->tools.choice, ToolChoice::kNone);
  EXPECT_TRUE(request->tools.parallel_tool_calls);
  EXPECT_FALSE(request->tools.may_call());
}

TEST(OpenAIRequestTools, ToolsReadWithDefaults) {
  auto request = Chat(Tools(std::string(kWeather) + ", " + std::string(kTime)));
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  const ToolsRequest& tools = request->tools;
  ASSERT_EQ(tools.functions.size(), 2u);
  EXPECT_EQ(tools.functions[0].name, "get_weather");
  EXPECT_EQ(tools.functions[0].description, "The weather");
  EXPECT_EQ(tools.functions[0].parameters["required"], Json::parse(R"(["city"])"));
  EXPECT_FALSE(tools.functions[0].strict);
  EXPECT_EQ(tools.functions[1].name, "get-time");
  EXPECT_EQ(tools.functions[1].description, "");
  EXPECT_EQ(tools.functions[1].parameters, Json::parse(R"({"type": "object", "properties": {}})"));
  EXPECT_EQ(tools.choice, ToolChoice::kAuto);
  EXPECT_TRUE(tools.may_call());
  ASSERT_EQ(tools.tools.size(), 2u);
  EXPECT_EQ(tools.tools[0], Json::parse(kWeather));  // as the client sent it, for templates
}

TEST(OpenAIRequestTools, EmptyToolsAreNoTools) {
  auto request = Chat(R"("tools": [])");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(request->tools.empty());
  EXPECT_EQ(request->tools.choice, ToolChoice::kNone);
}

TEST(OpenAIRequestTools, ToolChoices) {
  auto none = Chat(Tools() + R"(, "tool_choice": "none")");
  ASSERT_TRUE(none.ok()) << ErrorMessage(none);
  EXPECT_EQ(none->tools.choice, ToolChoice::kNone);
  EXPECT_FALSE(none->tools.may_call());
  auto required = Chat(Tools() + R"(, "tool_choice": "required", "parallel_tool_calls": false)");
  ASSERT_TRUE(required.ok()) << ErrorMessage(required);
  EXPECT_EQ(required->tools.choice, ToolChoice::kRequired);
  EXPECT_FALSE(required->tools.parallel_tool_calls);
  auto named = Chat(Tools() +
                    R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  ASSERT_TRUE(named.ok()) << ErrorMessage(named);
  EXPECT_EQ(named->tools.choice, ToolChoice::kFunction);
  EXPECT_EQ(named->tools.forced_function, "get_weather");
  // "none" without tools is harmless.
  EXPECT_TRUE(Chat(R"("tool_choice": "none")").ok());
}

TEST(OpenAIRequestTools, ToolErrors) {
  EXPECT_TRUE(IsBadRequest(Chat(R"("tools": {})"), "tools", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("tools": [3])"), "tools[0]", "invalid_type"));
  auto no_type = Chat(R"("tools": [{"function": {"name": "f"}}])");
  EXPECT_TRUE(IsBadRequest(no_type, "tools[0].type", "missing_required_parameter"));
  auto bad_type = Chat(R"("tools": [{"type": "code", "function": {"name": "f"}}])");
  EXPECT_TRUE(IsBadRequest(bad_type, "tools[0].type", "invalid_value"));
  EXPECT_EQ(ErrorMessage(bad_type), "Invalid value: 'code'. Supported values are: 'function'.");
  auto no_function = Chat(R"("tools": [{"type": "function"}])");
  EXPECT_TRUE(IsBadRequest(no_function, "tools[0].function", "missing_required_parameter"));
  auto no_name = Chat(Tools(std::string(kWeather) + R"(, {"type": "function", "function": {}})"));
  EXPECT_TRUE(IsBadRequest(no_name, "tools[1].function.name", "missing_required_parameter"));
  EXPECT_EQ(ErrorMessage(no_name), "Missing required parameter: 'tools[1].function.name'.");
  auto bad_name = Chat(Tools(std::string(kWeather) +
                             R"(, {"type": "function", "function": {"name": "get weather"}})"));
  EXPECT_TRUE(IsBadRequest(bad_name, "tools[1].function.name", "invalid_value"));
  EXPECT_EQ(ErrorMessage(bad_name),
            "Invalid 'tools[1].function.name': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'.");
  auto empty_name = Chat(R"("tools": [{"type": "function", "function": {"name": ""}}])");
  EXPECT_TRUE(IsBadRequest(empty_name, "tools[0].function.name", "empty_string"));
  auto long_name = Chat(R"("tools": [{"type": "function", "function": {"name": ")" +
                        std::string(65, 'a') + R"("}}])");
  EXPECT_TRUE(IsBadRequest(long_name, "tools[0].function.name", "string_above_max_length"));
  EXPECT_EQ(ErrorMessage(long_name),
            "Invalid 'tools[0].function.name': string too long. Expected a string with maximum "
            "length 64, but got a string with length 65 instead.");
  auto duplicate = Chat(Tools(std::string(kTime) + ", " + std::string(kWeather) + ", " +
                              std::string(kTime)));
  EXPECT_TRUE(IsBadRequest(duplicate, "tools[2].function.name", "invalid_value"));
  EXPECT_EQ(ErrorMessage(duplicate),
            "Invalid 'tools[2].function.name': the function name 'get-time' is already used by "
            "tools[0].");
  auto bad_parameters =
      Chat(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": []}}])");
  EXPECT_TRUE(IsBadRequest(bad_parameters, "tools[0].function.parameters", "invalid_type"));
  EXPECT_EQ(ErrorMessage(bad_parameters),
            "Invalid type for 'tools[0].function.parameters': expected an object, but got an "
            "array instead.");
  auto bad_description =
      Chat(R"("tools": [{"type": "function", "function": {"name": "f", "description": 1}}])");
  EXPECT_TRUE(IsBadRequest(bad_description, "tools[0].function.description", "invalid_type"));
  auto bad_strict =
      Chat(R"("tools": [{"type": "function", "function": {"name": "f", "strict": "yes"}}])");
  EXPECT_TRUE(IsBadRequest(bad_strict, "tools[0].function.strict", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(Tools() + R"(, "parallel_tool_calls": 1)"), "parallel_tool_calls",
                           "invalid_type"));
}

TEST(OpenAIRequestTools, ToolChoiceErrors) {
  auto unknown = Chat(Tools() + R"(, "tool_choice": {"type": "function", "function": {"name": "f"}})");
  EXPECT_TRUE(IsBadRequest(unknown, "tool_choice", "invalid_value"));
  EXPECT_EQ(ErrorMessage(unknown),
            "Invalid value for 'tool_choice': no function named 'f' was given in 'tools'.");
  auto bad_word = Chat(Tools() + R"(, "tool_choice": "always")");
  EXPECT_TRUE(IsBadRequest(bad_word, "tool_choice", "invalid_value"));
  EXPECT_EQ(ErrorMessage(bad_word),
            "Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.");
  auto without_tools = Chat(R"("tool_choice": "required")");
  EXPECT_TRUE(IsBadRequest(without_tools, "tool_choice", "invalid_value"));
  EXPECT_EQ(ErrorMessage(without_tools),
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.");
  EXPECT_TRUE(IsBadRequest(Chat(Tools() + R"(, "tool_choice": 1)"), "tool_choice", "invalid_type"));
  EXPECT_TRUE(IsBadRequest(Chat(Tools() + R"(, "tool_choice": {"type": "function"})"),
                           "tool_choice.function", "missing_required_parameter"));
  EXPECT_TRUE(IsBadRequest(Chat(Tools() + R"(, "tool_choice": {"function": {"name": "x"}})"),
                           "tool_choice.type", "missing_required_parameter"));
  EXPECT_TRUE(IsBadRequest(
      Chat(Tools() + R"(, "tool_choice": {"type": "function", "function": {}})"),
      "tool_choice.function.name", "missing_required_parameter"));
  EXPECT_TRUE(IsBadRequest(
      Chat(Tools() + R"(, "tool_choice": {"type": "code", "function": {"name": "get_weather"}})"),
      "tool_choice.type", "invalid_value"));
}

TEST(OpenAIRequestTools, FormatAndToolsBothRead) {
  auto request = Chat(Tools() + R"(, "response_format": {"type": "json_object"})");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(std::holds_alternative<JsonObjectFormat>(request->format));
  EXPECT_EQ(request->tools.functions.size(), 1u);
}

}  // namespace
}  // namespace pagoda::server
