// The tool-call grammars: their GBNF (rules, triggers, the choice between calls and a
// format), the errors of a schema the converter refuses, and, through the grammar
// library's matcher, that they accept well-formed calls and refuse malformed ones.

#include "server/tools/tool_grammar.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "server/service/api_service_grammar.h"

namespace pagoda::server::tools {
namespace {

ToolFunction Function(std::string name, std::string_view parameters) {
  ToolFunction function;
  function.name = std::move(name);
  function.parameters = Json::parse(parameters);
  return function;
}

ToolsRequest Tools(ToolChoice choice, bool parallel = true) {
  ToolsRequest tools;
  tools.functions.push_back(Function("get_weather", R"({"type": "object",
      "properties": {"city": {"type": "string"}}, "required": ["city"],
      "additionalProperties": false})"));
  tools.functions.push_back(Function("add", R"({"type": "object",
      "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
      "additionalProperties": false})"));
  tools.choice = choice;
  tools.parallel_tool_calls = parallel;
  return tools;
}

// A converter that names what it was asked for: "<root> ::= \"<prefix>\"".
Expected<std::string> Named(const Json&, const std::string& root, const std::string& prefix,
                            bool /*strict*/) {
  return root + " ::= \"" + prefix + "\"\n";
}

TEST(ToolGrammar, NoGrammarWithoutCalls) {
  auto none = build_tool_grammar(ToolFamily::kHermes, Tools(ToolChoice::kNone), Named);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto empty = build_tool_grammar(ToolFamily::kHermes, ToolsRequest{}, Named);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
}

TEST(ToolGrammar, HermesRequiredIsExact) {
  auto grammar = build_tool_grammar(ToolFamily::kHermes, Tools(ToolChoice::kRequired), Named);
  ASSERT_TRUE(grammar.ok());
  ASSERT_TRUE(grammar->has_value());
  EXPECT_TRUE((*grammar)->triggers.empty());
  EXPECT_EQ((*grammar)->gbnf,
            "root ::= tool-calls\n"
            "tool-calls ::= \"<tool_call>\" tool-ws tool-call tool-ws \"</tool_call>\" (tool-ws "
            "\"<tool_call>\" tool-ws tool-call tool-ws \"</tool_call>\"){0,7}\n"
            "tool-call ::= tool-fn0-call | tool-fn1-call\n"
            "tool-fn0-call ::= \"{\" tool-ws \"\\\"name\\\"\" tool-ws \":\" tool-ws "
            "\"\\\"get_weather\\\"\" tool-ws \",\" tool-ws \"\\\"arguments\\\"\" tool-ws \":\" "
            "tool-ws tool-fn0-arguments tool-ws \"}\"\n"
            "tool-fn0-arguments ::= \"tool-fn0-\"\n"
            "tool-fn1-call ::= \"{\" tool-ws \"\\\"name\\\"\" tool-ws \":\" tool-ws "
            "\"\\\"add\\\"\" tool-ws \",\" tool-ws \"\\\"arguments\\\"\" tool-ws \":\" tool-ws "
            "tool-fn1-arguments tool-ws \"}\"\n"
            "tool-fn1-arguments ::= \"tool-fn1-\"\n"
            "tool-ws ::= [ \\t\\n]{0,4}\n"
            "tool-string ::= \"\\\"\" tool-char* \"\\\"\"\n"
            "tool-char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n");
}

TEST(ToolGrammar, AutoIsLazyOnTheFamilysOpening) {
  const std::pair<ToolFamily, std::vector<std::string>> cases[] = {
      {ToolFamily::kHermes, {"<tool_call>"}},
      {ToolFamily::kLlama3, {"<|python_tag|>", "{\"name\""}},
      {ToolFamily::kMistral, {"[TOOL_CALLS]"}},
      {ToolFamily::kGeneric, {}},  // the whole answer is JSON: from the first token
  };
  for (const auto& [family, triggers] : cases) {
    auto grammar = build_tool_grammar(family, Tools(ToolChoice::kAuto), Named);
    ASSERT_TRUE(grammar.ok());
    ASSERT_TRUE(grammar->has_value());
    EXPECT_EQ((*grammar)->triggers, triggers) << tool_family_name(family);
    EXPECT_TRUE((*grammar)->gbnf.starts_with(
        family == ToolFamily::kGeneric
            ? "root ::= tool-calls | \"{\" tool-ws \"\\\"content\\\"\" tool-ws \":\" tool-ws "
              "tool-string tool-ws \"}\"\n"
            : "root ::= tool-calls\n"))
        << (*grammar)->gbnf;
  }
}

TEST(ToolGrammar, NamedFunctionIsOneCallOfIt) {
  ToolsRequest tools = Tools(ToolChoice::kFunction);
  tools.forced_function = "add";
  auto grammar = build_tool_grammar(ToolFamily::kMistral, tools, Named);
  ASSERT_TRUE(grammar.ok());
  const std::string& gbnf = (*grammar)->gbnf;
  EXPECT_NE(gbnf.find("tool-calls ::= \"[TOOL_CALLS]\" tool-ws \"[\" tool-ws tool-call tool-ws "
                      "\"]\"\n"),
            std::string::npos)
      << gbnf;
  EXPECT_NE(gbnf.find("tool-call ::= tool-fn1-call\n"), std::string::npos) << gbnf;
  EXPECT_EQ(gbnf.find("tool-fn0"), std::string::npos) << gbnf;
  EXPECT_TRUE((*grammar)->triggers.empty());
}

TEST(ToolGrammar, AFormatIsTheTextAnswersAlternative) {
  const TextFormatRules format{"fmt-root ::= \"42\"\n", "fmt-root"};
  auto grammar = build_tool_grammar(ToolFamily::kHermes, Tools(ToolChoice::kAuto), Named, format);
  ASSERT_TRUE(grammar.ok());
  EXPECT_TRUE((*grammar)->triggers.empty());
  EXPECT_TRUE((*grammar)->gbnf.starts_with("root ::= tool-calls | fmt-root\n"));
  EXPECT_TRUE((*grammar)->gbnf.ends_with("fmt-root ::= \"42\"\n"));
  // "required" has no text answer: the format is not part of it.
  auto required =
      build_tool_grammar(ToolFamily::kHermes, Tools(ToolChoice::kRequired), Named, format);
  ASSERT_TRUE(required.ok());
  EXPECT_EQ((*required)->gbnf.find("fmt-root"), std::string::npos);
}

TEST(ToolGrammar, ARefusedSchemaNamesItsTool) {
  const SchemaToGbnf refuse_second = [](const Json& schema, const std::string& root,
                                        const std::string& prefix,
                                        bool strict) -> Expected<std::string> {
    if (schema.contains("properties") && schema["properties"].contains("a")) {
      return invalid_argument("unsupported JSON Schema keyword 'not' at /properties/a");
    }
    return Named(schema, root, prefix, strict);
  };
  auto grammar =
      build_tool_grammar(ToolFamily::kHermes, Tools(ToolChoice::kRequired), refuse_second);
  ASSERT_FALSE(grammar.ok());
  EXPECT_EQ(grammar.error().status, 400);
  EXPECT_EQ(grammar.error().param, "tools[1].function.parameters");
  EXPECT_EQ(grammar.error().code, "invalid_value");
  EXPECT_EQ(grammar.error().message,
            "Invalid 'tools[1].function.parameters': unsupported JSON Schema keyword 'not' at "
            "/properties/a");
}

// The real grammar (JSON Schema converter, GBNF parser, matcher over bytes).
class ToolGrammarMatch : public ::testing::Test {
 protected:
  // The request's grammar as the service builds it.
  static std::string Gbnf(ToolFamily family, const ToolsRequest& tools,
                          const OutputFormat& format = TextFormat{}) {
    ApiResult<std::optional<RequestGrammar>> grammar = request_grammar(format, &tools, family);
    EXPECT_TRUE(grammar.ok()) << grammar.error().message;
    EXPECT_TRUE(grammar.ok() && grammar->has_value());
    return grammar.ok() && grammar->has_value() ? (*grammar)->gbnf : std::string();
  }

  // Whether the grammar takes `text` as a whole sentence.
  static bool Accepts(const std::string& gbnf, std::string_view text) {
    Expected<grammar::Grammar> parsed = grammar::parse_gbnf(gbnf);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << gbnf;
    if (!parsed.ok()) return false;
    auto compiled = grammar::compile_grammar(*parsed, grammar::VocabIndex::create({}, {}));
    EXPECT_TRUE(compiled.ok()) << compiled.status().message();
    if (!compiled.ok()) return false;
    grammar::GrammarMatcher matcher(*compiled);
    return matcher.accept_bytes(text) && matcher.can_terminate();
  }
};

TEST_F(ToolGrammarMatch, HermesCalls) {
  const std::string gbnf = Gbnf(ToolFamily::kHermes, Tools(ToolChoice::kRequired));
  EXPECT_TRUE(Accepts(gbnf, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                            "{\"city\": \"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(Accepts(gbnf, "<tool_call>{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":-2}}"
                            "</tool_call>\n<tool_call>{\"name\": \"get_weather\", "
                            "\"arguments\": {\"city\": \"\"}}</tool_call>"));
  // Wrong arguments, an unknown function, a missing closing tag, text before the call.
  EXPECT_FALSE(Accepts(gbnf, "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1}}"
                             "</tool_call>"));
  EXPECT_FALSE(Accepts(gbnf, "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                             "\"b\": \"2\"}}</tool_call>"));
  EXPECT_FALSE(Accepts(gbnf, "<tool_call>{\"name\": \"mul\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(Accepts(gbnf, "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                             "\"b\": 2}}"));
  EXPECT_FALSE(Accepts(gbnf, "Sure. <tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                             "\"b\": 2}}</tool_call>"));
}

TEST_F(ToolGrammarMatch, OneCallWithoutParallelCalls) {
  const std::string gbnf = Gbnf(ToolFamily::kHermes, Tools(ToolChoice::kRequired, false));
  const std::string call =
      "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}</tool_call>";
  EXPECT_TRUE(Accepts(gbnf, call));
  EXPECT_FALSE(Accepts(gbnf, call + "\n" + call));
}

TEST_F(ToolGrammarMatch, AtMostEightParallelCalls) {
  const std::string gbnf = Gbnf(ToolFamily::kGeneric, Tools(ToolChoice::kRequired));
  const std::string call = R"({"name": "add", "arguments": {"a": 1, "b": 2}})";
  std::string calls = call;
  for (int i = 1; i < 8; ++i) calls += ", " + call;
  EXPECT_TRUE(Accepts(gbnf, "{\"tool_calls\": [" + calls + "]}"));
  EXPECT_FALSE(Accepts(gbnf, "{\"tool_calls\": [" + calls + ", " + call + "]}"));
}

TEST_F(ToolGrammarMatch, StrictFunctionsTakeNoUndeclaredProperty) {
  ToolsRequest tools;
  tools.functions.push_back(Function("f", R"({"type": "object",
      "properties": {"a": {"type": "integer"}}, "required": ["a"]})"));
  tools.choice = ToolChoice::kRequired;
  const std::string extra =
      R"(<tool_call>{"name": "f", "arguments": {"a": 1, "b": 2}}</tool_call>)";
  EXPECT_TRUE(Accepts(Gbnf(ToolFamily::kHermes, tools), extra));
  tools.functions[0].strict = true;
  EXPECT_FALSE(Accepts(Gbnf(ToolFamily::kHermes, tools), extra));
  EXPECT_TRUE(Accepts(Gbnf(ToolFamily::kHermes, tools),
                      R"(<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>)"));
}

TEST_F(ToolGrammarMatch, Llama3Call) {
  ToolsRequest tools = Tools(ToolChoice::kFunction);
  tools.forced_function = "get_weather";
  const std::string gbnf = Gbnf(ToolFamily::kLlama3, tools);
  EXPECT_TRUE(Accepts(gbnf, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}"));
  EXPECT_TRUE(Accepts(gbnf, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": "
                            "{\"city\": \"Rome\"}}"));
  EXPECT_FALSE(Accepts(gbnf, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}"));
  EXPECT_FALSE(Accepts(gbnf, "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}"));
}

TEST_F(ToolGrammarMatch, MistralCalls) {
  const std::string gbnf = Gbnf(ToolFamily::kMistral, Tools(ToolChoice::kAuto));
  EXPECT_TRUE(Accepts(gbnf, "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, "
                            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}]"));
  EXPECT_FALSE(Accepts(gbnf, "[TOOL_CALLS][]"));
  EXPECT_FALSE(Accepts(gbnf, "[TOOL_CALLS]{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"));
}

TEST_F(ToolGrammarMatch, GenericAnswers) {
  const std::string gbnf = Gbnf(ToolFamily::kGeneric, Tools(ToolChoice::kAuto));
  EXPECT_TRUE(Accepts(gbnf, "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                            "\"b\": 2}}]}"));
  EXPECT_TRUE(Accepts(gbnf, "{\"content\": \"It is \\\"sunny\\\"\\n\\u00e9\"}"));
  EXPECT_FALSE(Accepts(gbnf, "{\"content\": \"raw\nnewline\"}"));
  EXPECT_FALSE(Accepts(gbnf, "{\"tool_calls\": []}"));
  EXPECT_FALSE(Accepts(gbnf, "Hello"));
  const std::string required = Gbnf(ToolFamily::kGeneric, Tools(ToolChoice::kRequired));
  EXPECT_FALSE(Accepts(required, "{\"content\": \"hi\"}"));
}

TEST_F(ToolGrammarMatch, ToolsWithAJsonSchemaFormat) {
  JsonSchemaFormat format;
  format.schema = Json::parse(R"({"type": "object", "properties": {"answer": {"type": "integer"}},
      "required": ["answer"], "additionalProperties": false})");
  format.param = "response_format.json_schema.schema";
  const std::string gbnf = Gbnf(ToolFamily::kHermes, Tools(ToolChoice::kAuto), format);
  EXPECT_TRUE(Accepts(gbnf, "{\"answer\": 42}"));
  EXPECT_TRUE(Accepts(gbnf, "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, "
                            "\"b\": 2}}</tool_call>"));
  EXPECT_FALSE(Accepts(gbnf, "The answer is 42."));
}

}  // namespace
}  // namespace pagoda::server::tools
