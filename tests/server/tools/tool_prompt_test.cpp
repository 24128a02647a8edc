// Prompts with tools, rendered with the real chat templates of each family: the tools
// in the template's own place, earlier calls with their arguments as objects, tool
// results; and the generic family's system message.

#include "server/tools/tool_prompt.h"

#include <gtest/gtest.h>

#include <string>

#include "tokenizer/chat_template.h"
#include "tool_test_util.h"

namespace pagoda::server::tools {
namespace {

using testing::read_template;

const Json kTools = Json::parse(R"([{"type": "function", "function": {"name": "get_weather",
    "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}])");

// A user question, the assistant's call (arguments as OpenAI clients send them: a JSON
// string), and the tool's result.
const Json kConversation = Json::parse(R"([
  {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "22 C"}])");

ToolsRequest Tools(ToolChoice choice = ToolChoice::kAuto) {
  ToolsRequest tools;
  tools.tools = kTools;
  ToolFunction function;
  function.name = "get_weather";
  function.description = "The weather in a city";
  function.parameters = kTools[0]["function"]["parameters"];
  tools.functions.push_back(function);
  tools.choice = choice;
  return tools;
}

std::string Render(const std::string& source, ToolFamily family, const ToolsRequest& tools,
                   Json extra = Json::object()) {
  ToolPrompt prompt = prepare_tool_prompt(family, kConversation, tools);
  for (auto& [name, value] : prompt.template_variables.items()) extra[name] = value;
  extra["bos_token"] = "<s>";
  extra["eos_token"] = "</s>";
  Expected<tokenizer::ChatTemplate> parsed = tokenizer::ChatTemplate::parse(source);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return {};
  Expected<std::string> rendered = parsed->render(prompt.messages, true, extra);
  EXPECT_TRUE(rendered.ok()) << rendered.status().message();
  return rendered.ok() ? *rendered : std::string();
}

TEST(ToolPrompt, ArgumentsBecomeObjectsForTemplatesThatKnowTools) {
  const ToolPrompt prompt = prepare_tool_prompt(ToolFamily::kHermes, kConversation, Tools());
  EXPECT_EQ(prompt.messages[1]["tool_calls"][0]["function"]["arguments"],
            Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(prompt.messages[2], kConversation[2]);
  EXPECT_EQ(prompt.template_variables, Json({{"tools", kTools}}));
  // Arguments that hold no JSON object stay the string they are.
  Json odd = kConversation;
  odd[1]["tool_calls"][0]["function"]["arguments"] = "not json";
  EXPECT_EQ(prepare_tool_prompt(ToolFamily::kMistral, odd, Tools())
                .messages[1]["tool_calls"][0]["function"]["arguments"],
            "not json");
}

TEST(ToolPrompt, QwenRendersToolsCallsAndResults) {
  const std::string source = read_template(testing::kQwenTemplate);
  if (source.empty()) GTEST_SKIP() << "no " << testing::kQwenTemplate;
  EXPECT_EQ(Render(source, ToolFamily::kHermes, Tools()),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user "
            "query.\n\nYou are provided with function signatures within <tools></tools> XML "
            "tags:\n<tools>\n"
            R"({"type": "function", "function": {"name": "get_weather", "description": "The weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})"
            "\n</tools>\n\nFor each function call, return a json object with function name and "
            "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
            "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n"
            R"({"name": "get_weather", "arguments": {"city": "Paris"}})"
            "\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n22 C\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ToolPrompt, LlamaRendersToolsCallsAndResults) {
  const std::string source = read_template(testing::kLlamaTemplate);
  if (source.empty()) GTEST_SKIP() << "no " << testing::kLlamaTemplate;
  const std::string rendered = Render(source, ToolFamily::kLlama3, Tools(),
                                     Json({{"date_string", "26 Jul 2024"}}));
  EXPECT_EQ(rendered,
            "<s><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please "
            "respond with a JSON for a function call with its proper arguments that best "
            "answers the given prompt.\n\nRespond in the format {\"name\": function name, "
            "\"parameters\": dictionary of argument name and its value}.Do not use variables."
            "\n\n" +
                kTools[0].dump(4) +
                "\n\nWeather in Paris?<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n"
                R"({"name": "get_weather", "parameters": {"city": "Paris"}})"
                "<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"22 C\"<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ToolPrompt, MistralRendersToolsCallsAndResults) {
  EXPECT_EQ(Render(testing::kMistralTemplate, ToolFamily::kMistral, Tools()),
            "<s>[INST]Weather in Paris?[/INST]"
            R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]</s>)"
            R"([TOOL_RESULTS]{"content": "22 C"}[/TOOL_RESULTS])");
}

TEST(ToolPrompt, GenericDescribesToolsAndRewritesTheTurns) {
  const ToolPrompt prompt = prepare_tool_prompt(ToolFamily::kGeneric, kConversation, Tools());
  EXPECT_EQ(prompt.template_variables, Json::object());
  ASSERT_EQ(prompt.messages.size(), 4u);
  EXPECT_EQ(prompt.messages[0]["role"], "system");
  EXPECT_EQ(prompt.messages[0]["content"],
            "You can call these functions:\n"
            "- get_weather: The weather in a city\n"
            R"(  arguments (JSON Schema): {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"
            "\n\nAnswer with one JSON object and nothing else.\n"
            "To call functions, answer:\n"
            R"({"tool_calls": [{"name": "<function name>", "arguments": {<the arguments>}}]})"
            "\nTo answer the user without calling a function, answer:\n"
            R"({"content": "<your answer>"})"
            "\n");
  EXPECT_EQ(prompt.messages[1], kConversation[0]);
  EXPECT_EQ(prompt.messages[2],
            Json::parse(R"({"role": "assistant", "content": "{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}]}"})"));
  EXPECT_EQ(prompt.messages[3],
            Json::parse(R"({"role": "user", "content": "{\"tool_result\":{\"name\":\"get_weather\",\"tool_call_id\":\"call_1\",\"content\":\"22 C\"}}"})"));
}

TEST(ToolPrompt, GenericPutsOneTurnsResultsInOneUserTurn) {
  Json messages = kConversation;
  messages[1]["tool_calls"].push_back(Json::parse(R"({"id": "call_2", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}})"));
  messages.push_back(Json::parse(R"({"role": "tool", "tool_call_id": "call_2", "content": "3 C"})"));
  messages.push_back(Json::parse(R"({"role": "assistant", "content": "22 C and 3 C."})"));
  const ToolPrompt prompt = prepare_tool_prompt(ToolFamily::kGeneric, messages, Tools());
  ASSERT_EQ(prompt.messages.size(), 5u);
  EXPECT_EQ(prompt.messages[3]["role"], "user");
  EXPECT_EQ(prompt.messages[3]["content"],
            R"({"tool_result":{"name":"get_weather","tool_call_id":"call_1","content":"22 C"}})"
            "\n"
            R"({"tool_result":{"name":"get_weather","tool_call_id":"call_2","content":"3 C"}})");
  EXPECT_EQ(prompt.messages[4], messages[4]);
  // A template that wants the roles to alternate renders it.
  const std::string source = read_template("alternating-roles.jinja");
  ASSERT_FALSE(source.empty());
  Expected<tokenizer::ChatTemplate> parsed = tokenizer::ChatTemplate::parse(source);
  ASSERT_TRUE(parsed.ok());
  Json extra = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  Expected<std::string> rendered = parsed->render(prompt.messages, true, extra);
  EXPECT_TRUE(rendered.ok()) << rendered.status().message();
}

TEST(ToolPrompt, GenericJoinsTheClientsSystemMessage) {
  Json messages = kConversation;
  messages.insert(messages.begin(), Json({{"role", "system"}, {"content", "Be brief."}}));
  const ToolPrompt prompt =
      prepare_tool_prompt(ToolFamily::kGeneric, messages, Tools(ToolChoice::kRequired));
  ASSERT_EQ(prompt.messages.size(), 4u);
  const std::string system = prompt.messages[0]["content"];
  EXPECT_TRUE(system.starts_with("Be brief.\n\nYou can call these functions:\n")) << system;
  EXPECT_TRUE(system.ends_with("Call a function now.\n")) << system;
  EXPECT_EQ(system.find("{\"content\""), std::string::npos) << "required: no text answer";
}

TEST(ToolPrompt, GenericRendersWithChatML) {
  const std::string source = read_template("chatml.jinja");
  ASSERT_FALSE(source.empty());
  const std::string rendered = Render(source, ToolFamily::kGeneric, Tools());
  EXPECT_TRUE(rendered.starts_with("<|im_start|>system\nYou can call these functions:\n"))
      << rendered;
  EXPECT_NE(rendered.find("<|im_start|>user\n{\"tool_result\":"), std::string::npos) << rendered;
}

TEST(ToolPrompt, WithoutToolsGenericRewritesOnlyAHistoryOfCalls) {
  ToolsRequest none;
  const Json plain = Json::parse(R"([{"role": "user", "content": "Hi"},
      {"role": "tool", "tool_call_id": "x", "content": "1"}])");
  EXPECT_EQ(prepare_tool_prompt(ToolFamily::kGeneric, plain, none).messages, plain);
  const ToolPrompt history = prepare_tool_prompt(ToolFamily::kGeneric, kConversation, none);
  ASSERT_EQ(history.messages.size(), 3u) << "no system message without tools";
  EXPECT_EQ(history.messages[1]["role"], "assistant");
  EXPECT_TRUE(history.messages[1]["content"].is_string());
  EXPECT_EQ(history.messages[2]["role"], "user");
}

}  // namespace
}  // namespace pagoda::server::tools
