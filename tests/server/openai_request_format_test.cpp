// Request parsing: the output format fields (response_format, guided_*, grammar,
// json_schema) on both endpoints, and their errors.

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "openai_test_util.h"
#include "server/openai/openai_request.h"

namespace pagoda::server {
namespace {

using testing::ErrorMessage;
using testing::IsBadRequest;
using testing::kVocab;

ApiResult<ChatCompletionRequest> Chat(std::string_view fields) {
  std::string body = R"({"messages": [{"role": "user", "content": "Hi"}], )";
  return parse_chat_completion_request(body + std::string(fields) + "}", kVocab);
}

ApiResult<CompletionRequest> Completion(std::string_view fields) {
  std::string body = R"({"prompt": "Hi", )";
  return parse_completion_request(body + std::string(fields) + "}", kVocab);
}

TEST(OpenAIRequestFormat, NoFormatIsText) {
  auto request = Chat(R"("n": 1)");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(std::holds_alternative<TextFormat>(request->format));
  auto completion = Completion(R"("n": 1)");
  ASSERT_TRUE(completion.ok()) << ErrorMessage(completion);
  EXPECT_TRUE(std::holds_alternative<TextFormat>(completion->format));
}

TEST(OpenAIRequestFormat, ResponseFormatText) {
  auto request = Chat(R"("response_format": {"type": "text"})");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(std::holds_alternative<TextFormat>(request->format));
}

TEST(OpenAIRequestFormat, ResponseFormatJsonObject) {
  auto request = Chat(R"("response_format": {"type": "json_object"})");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  const auto* format = std::get_if<JsonObjectFormat>(&request->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->param, "response_format");
}

TEST(OpenAIRequestFormat, ResponseFormatJsonSchema) {
  auto request = Chat(R"("response_format": {"type": "json_schema", "json_schema": {
      "name": "Person", "description": "someone", "strict": true,
      "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}})");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  const auto* format = std::get_if<JsonSchemaFormat>(&request->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->name, "Person");
  EXPECT_EQ(format->description, "someone");
  EXPECT_TRUE(format->strict);
  EXPECT_EQ(format->schema,
            Json::parse(R"({"type": "object", "properties": {"name": {"type": "string"}}})"));
  EXPECT_EQ(format->param, "response_format.json_schema.schema");
}

TEST(OpenAIRequestFormat, ResponseFormatJsonSchemaWithoutSchemaIsAnyObject) {
  auto request =
      Chat(R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(std::holds_alternative<JsonObjectFormat>(request->format));
}

TEST(OpenAIRequestFormat, ResponseFormatErrors) {
  auto not_object = Chat(R"("response_format": "json")");
  EXPECT_TRUE(IsBadRequest(not_object, "response_format", "invalid_type"));
  EXPECT_EQ(ErrorMessage(not_object),
            "Invalid type for 'response_format': expected an object, but got a string instead.");

  auto no_type = Chat(R"("response_format": {})");
  EXPECT_TRUE(IsBadRequest(no_type, "response_format.type", "missing_required_parameter"));
  EXPECT_EQ(ErrorMessage(no_type), "Missing required parameter: 'response_format.type'.");

  auto bad_type = Chat(R"("response_format": {"type": "xml"})");
  EXPECT_TRUE(IsBadRequest(bad_type, "response_format.type", "invalid_value"));
  EXPECT_EQ(ErrorMessage(bad_type),
            "Invalid value: 'xml'. Supported values are: 'text', 'json_object', and "
            "'json_schema'.");

  auto no_spec = Chat(R"("response_format": {"type": "json_schema"})");
  EXPECT_TRUE(IsBadRequest(no_spec, "response_format.json_schema", "missing_required_parameter"));

  auto no_name = Chat(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}})");
  EXPECT_TRUE(
      IsBadRequest(no_name, "response_format.json_schema.name", "missing_required_parameter"));

  auto bad_schema = Chat(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}})");
  EXPECT_TRUE(IsBadRequest(bad_schema, "response_format.json_schema.schema", "invalid_type"));

  auto bad_strict = Chat(
      R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": 1}})");
  EXPECT_TRUE(IsBadRequest(bad_strict, "response_format.json_schema.strict", "invalid_type"));
}

TEST(OpenAIRequestFormat, GuidedJsonTakesAnObjectOrAStringOfOne) {
  auto object = Chat(R"("guided_json": {"type": "integer"})");
  ASSERT_TRUE(object.ok()) << ErrorMessage(object);
  const auto* format = std::get_if<JsonSchemaFormat>(&object->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->schema, Json::parse(R"({"type": "integer"})"));
  EXPECT_EQ(format->param, "guided_json");

  auto text = Completion(R"("guided_json": "{\"type\": \"boolean\"}")");
  ASSERT_TRUE(text.ok()) << ErrorMessage(text);
  format = std::get_if<JsonSchemaFormat>(&text->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->schema, Json::parse(R"({"type": "boolean"})"));

  auto bad = Chat(R"("guided_json": "not json")");
  EXPECT_TRUE(IsBadRequest(bad, "guided_json", "invalid_value"));
  EXPECT_EQ(ErrorMessage(bad), "Invalid 'guided_json': the string is not a JSON object (a JSON Schema).");
  EXPECT_TRUE(IsBadRequest(Chat(R"("guided_json": [1])"), "guided_json", "invalid_type"));
}

TEST(OpenAIRequestFormat, LlamaServerJsonSchema) {
  auto request = Completion(R"("json_schema": {"type": "string"})");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  const auto* format = std::get_if<JsonSchemaFormat>(&request->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->param, "json_schema");
}

TEST(OpenAIRequestFormat, GuidedRegex) {
  auto request = Chat(R"("guided_regex": "[0-9]+")");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  const auto* format = std::get_if<RegexFormat>(&request->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->pattern, "[0-9]+");
  EXPECT_EQ(format->param, "guided_regex");
  EXPECT_TRUE(IsBadRequest(Chat(R"("guided_regex": "")"), "guided_regex", "empty_string"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("guided_regex": 5)"), "guided_regex", "invalid_type"));
}

TEST(OpenAIRequestFormat, GuidedChoice) {
  auto request = Completion(R"("guided_choice": ["yes", "no"])");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  const auto* format = std::get_if<ChoiceFormat>(&request->format);
  ASSERT_NE(format, nullptr);
  EXPECT_EQ(format->choices, (std::vector<std::string>{"yes", "no"}));
  EXPECT_TRUE(IsBadRequest(Chat(R"("guided_choice": [])"), "guided_choice", "empty_array"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("guided_choice": ["a", ""])"), "guided_choice[1]", "empty_string"));
  EXPECT_TRUE(IsBadRequest(Chat(R"("guided_choice": ["a", 2])"), "guided_choice[1]", "invalid_type"));
  auto not_array = Chat(R"("guided_choice": "a")");
  EXPECT_TRUE(IsBadRequest(not_array, "guided_choice", "invalid_type"));
  EXPECT_EQ(ErrorMessage(not_array),
            "Invalid type for 'guided_choice': expected an array of strings, but got a string "
            "instead.");
}

TEST(OpenAIRequestFormat, Grammars) {
  for (const char* field : {"guided_grammar", "grammar"}) {
    auto request = Chat("\"" + std::string(field) + R"(": "root ::= \"a\"")");
    ASSERT_TRUE(request.ok()) << ErrorMessage(request);
    const auto* format = std::get_if<GrammarFormat>(&request->format);
    ASSERT_NE(format, nullptr);
    EXPECT_EQ(format->gbnf, "root ::= \"a\"");
    EXPECT_EQ(format->param, field);
  }
}

TEST(OpenAIRequestFormat, NullFieldsAreAbsent) {
  auto request = Chat(R"("guided_json": null, "guided_regex": "a", "grammar": null)");
  ASSERT_TRUE(request.ok()) << ErrorMessage(request);
  EXPECT_TRUE(std::holds_alternative<RegexFormat>(request->format));
}

TEST(OpenAIRequestFormat, TwoFormatsAreRefused) {
  auto two = Chat(R"("response_format": {"type": "json_object"}, "guided_regex": "a")");
  EXPECT_TRUE(IsBadRequest(two, "guided_regex", "invalid_value"));
  EXPECT_EQ(ErrorMessage(two),
            "'guided_regex' cannot be combined with 'response_format': a request takes at most "
            "one output format.");
  auto also = Completion(R"("guided_json": {}, "json_schema": {})");
  EXPECT_TRUE(IsBadRequest(also, "json_schema", "invalid_value"));
  // response_format "text" asks for no format: it combines with any.
  auto text = Chat(R"("response_format": {"type": "text"}, "grammar": "root ::= \"a\"")");
  ASSERT_TRUE(text.ok()) << ErrorMessage(text);
  EXPECT_TRUE(std::holds_alternative<GrammarFormat>(text->format));
}

}  // namespace
}  // namespace pagoda::server
