// A request's grammar: the GBNF of each output format, their errors naming the field,
// the combination with tools, and the cache of compiled grammars.

#include "server/service/api_service_grammar.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "grammar/matcher.h"

namespace pagoda::server {
namespace {

using tools::ToolFamily;

ApiResult<std::optional<RequestGrammar>> ForFormat(const OutputFormat& format) {
  return request_grammar(format, nullptr, ToolFamily::kHermes);
}

bool Accepts(const RequestGrammar& request, std::string_view text) {
  GrammarCache cache(grammar::VocabIndex::create({}, {}), 4);
  auto constraint = cache.constraint(request);
  EXPECT_TRUE(constraint.ok()) << constraint.error().message;
  if (!constraint.ok()) return false;
  grammar::GrammarMatcher matcher((*constraint)->grammar);
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

TEST(RequestGrammar, TextHasNone) {
  auto grammar = ForFormat(TextFormat{});
  ASSERT_TRUE(grammar.ok());
  EXPECT_FALSE(grammar->has_value());
  ToolsRequest none;  // no tools either
  auto with_tools = request_grammar(TextFormat{}, &none, ToolFamily::kHermes);
  ASSERT_TRUE(with_tools.ok());
  EXPECT_FALSE(with_tools->has_value());
}

TEST(RequestGrammar, EachFormatConstrains) {
  JsonSchemaFormat schema;
  schema.schema = Json::parse(R"({"type": "object", "properties": {"n": {"type": "integer"}},
      "required": ["n"]})");
  schema.param = "guided_json";
  auto json = ForFormat(schema);
  ASSERT_TRUE(json.ok()) << json.error().message;
  EXPECT_TRUE((*json)->triggers.empty());
  EXPECT_EQ((*json)->param, "guided_json");
  EXPECT_TRUE(Accepts(**json, R"({"n": 3})"));
  EXPECT_FALSE(Accepts(**json, R"({"n": "3"})"));

  auto object = ForFormat(JsonObjectFormat{"response_format"});
  ASSERT_TRUE(object.ok());
  EXPECT_TRUE(Accepts(**object, R"({"any": [1, true]})"));
  EXPECT_FALSE(Accepts(**object, "[1]"));

  auto regex = ForFormat(RegexFormat{"[a-c]{2}\\d", "guided_regex"});
  ASSERT_TRUE(regex.ok());
  EXPECT_TRUE(Accepts(**regex, "ab7"));
  EXPECT_FALSE(Accepts(**regex, "ad7"));

  auto choice = ForFormat(ChoiceFormat{{"yes", "no"}, "guided_choice"});
  ASSERT_TRUE(choice.ok());
  EXPECT_TRUE(Accepts(**choice, "no"));
  EXPECT_FALSE(Accepts(**choice, "maybe"));

  auto gbnf = ForFormat(GrammarFormat{"root ::= \"a\"+", "grammar"});
  ASSERT_TRUE(gbnf.ok());
  EXPECT_EQ((*gbnf)->gbnf, "root ::= \"a\"+");
  EXPECT_TRUE(Accepts(**gbnf, "aaa"));
}

TEST(RequestGrammar, ConverterErrorsNameTheField) {
  JsonSchemaFormat schema;
  schema.schema = Json::parse(R"({"type": "object", "patternProperties": {}})");
  schema.param = "response_format.json_schema.schema";
  auto refused = ForFormat(schema);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().status, 400);
  EXPECT_EQ(refused.error().param, "response_format.json_schema.schema");
  EXPECT_TRUE(refused.error().message.starts_with(
      "Invalid 'response_format.json_schema.schema': unsupported JSON Schema keyword "
      "'patternProperties'"))
      << refused.error().message;

  auto regex = ForFormat(RegexFormat{"(a)\\1", "guided_regex"});
  ASSERT_FALSE(regex.ok());
  EXPECT_EQ(regex.error().param, "guided_regex");
  EXPECT_TRUE(regex.error().message.starts_with("Invalid 'guided_regex': ")) << regex.error().message;
}

TEST(RequestGrammar, BadGbnfIsA400AtCompile) {
  GrammarCache cache(grammar::VocabIndex::create({}, {}), 4);
  auto constraint = cache.constraint(RequestGrammar{"root ::= missing", {}, "guided_grammar"});
  ASSERT_FALSE(constraint.ok());
  EXPECT_EQ(constraint.error().status, 400);
  EXPECT_EQ(constraint.error().param, "guided_grammar");
  EXPECT_TRUE(constraint.error().message.starts_with(
      "Invalid 'guided_grammar': the grammar is not valid: line 1, column"))
      << constraint.error().message;
  EXPECT_EQ(cache.size(), 0u);
}

ToolsRequest WeatherTools(ToolChoice choice) {
  ToolsRequest tools;
  ToolFunction function;
  function.name = "get_weather";
  function.parameters = Json::parse(R"({"type": "object", "properties": {"city": {"type":
      "string"}}, "required": ["city"]})");
  tools.functions.push_back(function);
  tools.choice = choice;
  return tools;
}

TEST(RequestGrammar, ToolsAndFormats) {
  // A GBNF format cannot sit beside the tools' rules.
  ToolsRequest tools = WeatherTools(ToolChoice::kAuto);
  auto gbnf = request_grammar(GrammarFormat{"root ::= \"a\"", "guided_grammar"}, &tools,
                              ToolFamily::kHermes);
  ASSERT_FALSE(gbnf.ok());
  EXPECT_EQ(gbnf.error().param, "guided_grammar");
  EXPECT_EQ(gbnf.error().code, "unsupported_parameter");
  // With tool_choice "none" the format is the whole grammar.
  ToolsRequest none = WeatherTools(ToolChoice::kNone);
  auto alone = request_grammar(GrammarFormat{"root ::= \"a\"", "guided_grammar"}, &none,
                               ToolFamily::kHermes);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ((*alone)->gbnf, "root ::= \"a\"");
  // Regex and choice formats take the tools' side.
  auto choice = request_grammar(ChoiceFormat{{"sunny", "rainy"}, "guided_choice"}, &tools,
                                ToolFamily::kHermes);
  ASSERT_TRUE(choice.ok()) << choice.error().message;
  EXPECT_EQ((*choice)->param, "tools");
  EXPECT_TRUE((*choice)->triggers.empty());
  EXPECT_TRUE(Accepts(**choice, "rainy"));
  EXPECT_TRUE(Accepts(**choice, "<tool_call>{\"name\": \"get_weather\", \"arguments\": "
                                "{\"city\": \"Oslo\"}}</tool_call>"));
  EXPECT_FALSE(Accepts(**choice, "cloudy"));
  // Auto without a format: lazy, on the opening tag.
  auto lazy = request_grammar(TextFormat{}, &tools, ToolFamily::kHermes);
  ASSERT_TRUE(lazy.ok());
  EXPECT_EQ((*lazy)->triggers, std::vector<std::string>{"<tool_call>"});
}

TEST(GrammarCache, SharesCompiledGrammarsAndDropsTheLeastRecentlyUsed) {
  GrammarCache cache(grammar::VocabIndex::create({}, {}), 2);
  const RequestGrammar a{"root ::= \"a\"", {}, "grammar"};
  const RequestGrammar b{"root ::= \"b\"", {"<t>"}, "grammar"};
  const RequestGrammar c{"root ::= \"c\"", {}, "grammar"};
  auto a1 = cache.constraint(a);
  auto b1 = cache.constraint(b);
  ASSERT_TRUE(a1.ok() && b1.ok());
  EXPECT_EQ((*b1)->triggers, std::vector<std::string>{"<t>"});
  auto a2 = cache.constraint(a);  // a is now the most recent
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ((*a1)->grammar, (*a2)->grammar);
  EXPECT_EQ(cache.size(), 2u);
  ASSERT_TRUE(cache.constraint(c).ok());  // drops b
  EXPECT_EQ(cache.size(), 2u);
  auto a3 = cache.constraint(a);
  EXPECT_EQ((*a3)->grammar, (*a1)->grammar);
  auto b2 = cache.constraint(b);
  EXPECT_NE((*b2)->grammar, (*b1)->grammar) << "b was compiled again";
}

TEST(GrammarCache, ThreadsShareIt) {
  GrammarCache cache(grammar::VocabIndex::create({}, {}), 3);
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&cache, &failures, t] {
      for (int i = 0; i < 20; ++i) {
        const std::string gbnf = "root ::= \"" + std::to_string((i + t) % 5) + "\"";
        if (!cache.constraint(RequestGrammar{gbnf, {}, "grammar"}).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(GrammarCache, BuildsItsVocabularyOnFirstUse) {
  int built = 0;
  GrammarCache cache(nullptr, 2, [&built](std::span<const int32_t> text_tokens) {
    ++built;
    EXPECT_EQ(std::vector<int32_t>(text_tokens.begin(), text_tokens.end()), std::vector<int32_t>{2});
    return grammar::VocabIndex::create({"a", "b", ""}, {2});
  }, {2});
  EXPECT_EQ(built, 0);
  ASSERT_TRUE(cache.constraint(RequestGrammar{"root ::= \"a\"", {}, "grammar"}).ok());
  ASSERT_TRUE(cache.constraint(RequestGrammar{"root ::= \"b\"", {}, "grammar"}).ok());
  EXPECT_EQ(built, 1);
  EXPECT_EQ(cache.vocab()->n_vocab(), 3);
  // Every constraint asks its output to show the tokens the vocabulary was made with.
  auto constraint = cache.constraint(RequestGrammar{"root ::= \"a\"", {}, "grammar"});
  ASSERT_TRUE(constraint.ok());
  EXPECT_EQ((*constraint)->shown_tokens, std::vector<int32_t>{2});
}

}  // namespace
}  // namespace pagoda::server
