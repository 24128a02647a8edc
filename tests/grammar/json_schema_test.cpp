// The JSON Schema front end beyond the corpus: error messages, options (rule prefix,
// compact, strict properties), any JSON, and integer and number ranges checked value by
// value against the matcher.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <sstream>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_ranges.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace pagoda::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const CompiledGrammar> compile_text(const std::string& text) {
  auto grammar = parse_gbnf(text);
  EXPECT_TRUE(grammar.ok()) << grammar.status().message() << "\n" << text;
  if (!grammar.ok()) return nullptr;
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  EXPECT_TRUE(compiled.ok()) << compiled.status().message() << "\n" << text;
  return compiled.ok() ? *compiled : nullptr;
}

std::shared_ptr<const CompiledGrammar> compile_schema(const std::string& schema,
                                                      const JsonSchemaOptions& options = {}) {
  auto text = json_schema_to_gbnf(Json::parse(schema), options);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? compile_text(*text) : nullptr;
}

bool matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

std::string error_of(const std::string& schema) {
  auto text = json_schema_to_gbnf(Json::parse(schema));
  if (text.ok()) return "no error";
  EXPECT_EQ(text.status().code(), ErrorCode::kInvalidArgument);
  return text.status().message();
}

TEST(JsonSchemaErrors, UnsupportedKeywordsNameThemselvesAndTheirPlace) {
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"tags":{"type":"object","patternProperties":{}}}})"),
            "unsupported JSON Schema keyword 'patternProperties' at /properties/tags");
  for (const char* keyword : {"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "uniqueItems",
                              "contains", "minContains", "multipleOf", "propertyNames", "minProperties",
                              "maxProperties", "unevaluatedProperties", "additionalItems", "nullable", "$anchor"}) {
    const std::string schema = std::string(R"({"type":"array","items":{")") + keyword + R"(":1}})";
    EXPECT_EQ(error_of(schema), std::string("unsupported JSON Schema keyword '") + keyword + "' at /items");
  }
  EXPECT_EQ(error_of(R"({"minProperties":1})"), "unsupported JSON Schema keyword 'minProperties' at the schema root");
  EXPECT_EQ(error_of(R"({"$defs":{"a/b":{"type":"string","foo":1}},"$ref":"#/$defs/a~1b"})"),
            "unsupported JSON Schema keyword 'foo' at /$defs/a~1b");
  EXPECT_EQ(error_of(R"({"anyOf":[{"type":"string"},{"bar":true}]})"),
            "unsupported JSON Schema keyword 'bar' at /anyOf/1");
}

TEST(JsonSchemaErrors, InvalidSchemasNameThePlace) {
  EXPECT_EQ(error_of(R"({"type":"array","properties":{"list":{"type":"array","minItems":3,"maxItems":2}}})"),
            "no error");  // properties of an array schema are not looked at
  EXPECT_EQ(error_of(R"({"properties":{"list":{"type":"array","minItems":3,"maxItems":2}}})"),
            "minItems above maxItems at /properties/list");
  EXPECT_EQ(error_of(R"({"type":"string","minLength":5,"maxLength":1})"),
            "minLength above maxLength at the schema root");
  EXPECT_EQ(error_of(R"({"type":"string","minLength":-1})"), "minLength must be a non-negative integer at /minLength");
  EXPECT_EQ(error_of(R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})"),
            "$ref '#/$defs/missing' points nowhere at /properties/a/$ref");
  EXPECT_EQ(error_of(R"({"$ref":"other.json#/a"})"),
            "$ref 'other.json#/a' is not a local reference (#...) at /$ref");
  EXPECT_EQ(error_of(R"({"$ref":7})"), "$ref must be a string at /$ref");
  EXPECT_EQ(error_of(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"),
            "$ref '#/$defs/a' refers to itself without content at /$ref");
  EXPECT_EQ(error_of(R"({"$ref":"#/$defs/a","type":"string","$defs":{"a":{}}})"),
            "unsupported keyword 'type' beside '$ref' at the schema root");
  EXPECT_EQ(error_of(R"({"type":"str"})"), "unknown type 'str' at /type");
  EXPECT_EQ(error_of(R"({"type":5})"), "type must be a string or a list of strings at /type");
  EXPECT_EQ(error_of(R"({"type":"object","properties":[]})"), "properties must be an object at /properties");
  EXPECT_EQ(error_of(R"({"type":"object","required":"a"})"), "required must be an array of strings at /required");
  EXPECT_EQ(error_of(R"({"type":"object","additionalProperties":1})"),
            "additionalProperties must be a boolean or a schema at /additionalProperties");
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":5,"maximum":4})"),
            "the range from minimum to maximum is empty at the schema root");
  EXPECT_EQ(error_of(R"({"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2})"),
            "no integer between minimum and maximum at the schema root");
  EXPECT_EQ(error_of(R"({"type":"number","minimum":"1"})"), "minimum must be a number at /minimum");
  EXPECT_EQ(error_of(R"({"allOf":[{"type":"string"},{"minLength":1}]})"),
            "allOf with more than one subschema is unsupported at /allOf");
  EXPECT_EQ(error_of(R"({"anyOf":[]})"), "anyOf must be a non-empty array at /anyOf");
  EXPECT_EQ(error_of(R"({"enum":[]})"), "enum must be a non-empty array at /enum");
  EXPECT_EQ(error_of(R"({"properties":{"p":{"type":"string","pattern":"(a"}}})"),
            "regex: unmatched '(' at offset 0 in '(a' at /properties/p/pattern");
  EXPECT_EQ(error_of(R"({"properties":{"p":{"pattern":"(?=a)b"}}})"),
            "regex: lookahead '(?=' (unsupported) at offset 0 in '(?=a)b' at /properties/p/pattern");
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"x":false},"required":["x"]})"),
            "a required property whose schema is false at /properties/x");
  EXPECT_EQ(error_of("[1]"), "a schema must be an object or a boolean at the schema root");
  EXPECT_EQ(error_of("false"), "schema false (no value allowed) is unsupported here at the schema root");
}

TEST(JsonSchemaErrors, LimitsOfSizeAndDepth) {
  std::string deep = "{}";
  for (int i = 0; i < 200; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_EQ(error_of(deep).substr(0, 36), "schema nested deeper than 100 levels");
  EXPECT_EQ(error_of(R"({"type":"string","minLength":20000})"), "minLength above 10000 is unsupported at /minLength");
  EXPECT_EQ(error_of(R"({"type":"array","minItems":1e300})"), "minItems above 10000 is unsupported at /minItems");
}

TEST(JsonSchema, LongMaximaAreNotCounted) {
  JsonSchemaOptions options;
  options.max_counted_repetition = 4;
  auto grammar = compile_schema(R"({"type":"array","items":{"type":"string","maxLength":4},"maxItems":5})", options);
  ASSERT_NE(grammar, nullptr);
  EXPECT_TRUE(matches(grammar, R"(["abcd","","a","b","c","d","e"])"));  // maxItems 5 above 4: not enforced
  EXPECT_FALSE(matches(grammar, R"(["abcde"])"));                      // maxLength 4 is
}

TEST(JsonSchema, RulePrefixLetsSchemasShareOneGrammar) {
  JsonSchemaOptions weather;
  weather.rule_prefix = "weather-";
  JsonSchemaOptions search;
  search.rule_prefix = "search-";
  auto a = json_schema_to_gbnf(Json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},
      "required":["city"],"additionalProperties":false})"), weather);
  auto b = json_schema_to_gbnf(Json::parse(R"({"type":"object","properties":{"query":{"type":"string"},
      "limit":{"type":"integer","minimum":1,"maximum":50}},"required":["query"],"additionalProperties":false})"), search);
  ASSERT_TRUE(a.ok() && b.ok());
  std::istringstream lines(*a + *b);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_TRUE(line.starts_with("weather-") || line.starts_with("search-")) << line;
  }
  auto grammar = compile_text("root ::= weather-root | search-root\n" + *a + *b);
  ASSERT_NE(grammar, nullptr);
  EXPECT_TRUE(matches(grammar, R"({"city": "Oslo"})"));
  EXPECT_TRUE(matches(grammar, R"({"query": "q", "limit": 50})"));
  EXPECT_FALSE(matches(grammar, R"({"query": "q", "limit": 51})"));
  EXPECT_FALSE(matches(grammar, R"({"city": "Oslo", "limit": 1})"));
}

TEST(JsonSchema, PropertiesAlikeShareOneRule) {
  auto text = json_schema_to_gbnf(Json::parse(R"({"type":"object","properties":{
      "a":{"type":"string","maxLength":3},"b":{"type":"string","maxLength":3},"c":{"type":"string","maxLength":4}},
      "required":["a","b","c"],"additionalProperties":false})"));
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("{0,3}"), text->rfind("{0,3}")) << *text;
  EXPECT_NE(text->find("\"\\\"b\\\"\" \":\" ws root-a"), std::string::npos) << *text;
  EXPECT_NE(text->find("{0,4}"), std::string::npos) << *text;
}

TEST(JsonSchema, RootRuleNameIsAnOption) {
  JsonSchemaOptions options;
  options.root_rule = "args";
  auto text = json_schema_to_gbnf(Json::parse(R"({"type":"boolean"})"), options);
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text->starts_with("args ::= ")) << *text;
  EXPECT_TRUE(parse_gbnf(*text, "args").ok());
}

TEST(JsonSchema, RuleNamesKeepLettersDigitsAndDashes) {
  JsonSchemaOptions options;
  options.rule_prefix = "fn_get.weather/";
  auto text = json_schema_to_gbnf(Json::parse(R"({"type":"object","properties":{"next city":{"anyOf":[
      {"$ref":"#"},{"type":"null"}]}},"required":["next city"],"additionalProperties":false})"), options);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_TRUE(text->starts_with("fn-get-weather-root ::= ")) << *text;
  auto grammar = parse_gbnf(*text, "fn-get-weather-root");
  ASSERT_TRUE(grammar.ok()) << grammar.status().message() << "\n" << *text;
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  ASSERT_TRUE(compiled.ok());
  EXPECT_TRUE(matches(*compiled, R"({"next city": {"next city": null}})"));
  EXPECT_FALSE(matches(*compiled, R"({"next city": {}})"));
  options = {};
  options.root_rule = "";
  auto unnamed = json_schema_to_gbnf(Json::parse(R"({"type":"null"})"), options);
  ASSERT_TRUE(unnamed.ok());
  EXPECT_EQ(*unnamed, "rule ::= null\nnull ::= \"null\"\n");
}

TEST(JsonSchema, CompactAllowsNoWhitespace) {
  JsonSchemaOptions options;
  options.compact = true;
  auto grammar = compile_schema(R"({"type":"object","properties":{"a":{"type":"array"}}})", options);
  ASSERT_NE(grammar, nullptr);
  EXPECT_TRUE(matches(grammar, R"({"a":[1,{"b":[]}]})"));
  EXPECT_FALSE(matches(grammar, R"({"a": [1]})"));
  EXPECT_FALSE(matches(grammar, "{\n\"a\":[]}"));
}

TEST(JsonSchema, MaxIndentBoundsTheWhitespace) {
  JsonSchemaOptions options;
  options.max_indent = 4;
  auto grammar = compile_schema(R"({"type":"array","items":{"type":"integer"}})", options);
  ASSERT_NE(grammar, nullptr);
  EXPECT_TRUE(matches(grammar, "[\n    1\n]"));
  EXPECT_FALSE(matches(grammar, "[\n     1\n]"));
}

TEST(JsonSchema, StrictPropertiesForbidsExtrasWhenUnsaid) {
  const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
  JsonSchemaOptions strict;
  strict.strict_properties = true;
  auto lenient_grammar = compile_schema(schema);
  auto strict_grammar = compile_schema(schema, strict);
  ASSERT_NE(lenient_grammar, nullptr);
  ASSERT_NE(strict_grammar, nullptr);
  EXPECT_TRUE(matches(lenient_grammar, R"({"a":1,"b":2})"));
  EXPECT_FALSE(matches(strict_grammar, R"({"a":1,"b":2})"));
  EXPECT_TRUE(matches(strict_grammar, R"({"a":1})"));
  EXPECT_TRUE(matches(strict_grammar, R"({})"));
}

TEST(JsonSchema, AnyJson) {
  auto value = compile_text(any_json_gbnf());
  auto object = compile_text(any_json_gbnf({}, /*object_only=*/true));
  ASSERT_NE(value, nullptr);
  ASSERT_NE(object, nullptr);
  for (const char* text : {"1", "\"s\"", "null", "[]", "{}", R"({"a": [1, {"b": null}], "c": "\u00e9"})"}) {
    EXPECT_TRUE(matches(value, text)) << text;
  }
  EXPECT_TRUE(matches(object, R"({"a": [1, {"b": null}]})"));
  EXPECT_TRUE(matches(object, "{\n  \"k\": true\n}"));
  for (const char* text : {"1", "[]", "\"{}\"", "{", "{\"a\":1,}", "{'a':1}"}) {
    EXPECT_FALSE(matches(object, text)) << text;
  }
}

// Every integer near the bounds, accepted exactly when inside them.
void check_integer_range(std::optional<int64_t> min, std::optional<int64_t> max) {
  auto grammar = compile_text("root ::= " + integer_range_gbnf(min, max) + "\n");
  ASSERT_NE(grammar, nullptr);
  const int64_t from = min ? *min - 120 : (max ? *max - 1200 : -1200);
  const int64_t to = max ? *max + 120 : (min ? *min + 1200 : 1200);
  for (int64_t v = from; v <= to; ++v) {
    const bool inside = (!min || v >= *min) && (!max || v <= *max);
    ASSERT_EQ(matches(grammar, std::to_string(v)), inside)
        << v << " in [" << (min ? std::to_string(*min) : "-inf") << ", " << (max ? std::to_string(*max) : "inf") << "]";
  }
  EXPECT_FALSE(matches(grammar, "-0"));
  EXPECT_FALSE(matches(grammar, "00"));
  EXPECT_FALSE(matches(grammar, "+1"));
}

TEST(JsonSchemaRanges, IntegersDigitByDigit) {
  check_integer_range(-5, 123);
  check_integer_range(0, 0);
  check_integer_range(7, 7);
  check_integer_range(10, 99);
  check_integer_range(-100, -10);
  check_integer_range(1, 1000);
  check_integer_range(123, 4567);
  check_integer_range(-987, 65);
  check_integer_range(18, std::nullopt);
  check_integer_range(-42, std::nullopt);
  check_integer_range(std::nullopt, -10);
  check_integer_range(std::nullopt, 305);
  check_integer_range(std::nullopt, std::nullopt);
  EXPECT_EQ(integer_range_gbnf(-5, 123),
            "([0-9] | [1-9] [0-9] | \"1\" ([0-1] [0-9] | \"2\" [0-3]) | \"-\" [1-5])");
  EXPECT_EQ(integer_range_gbnf(1000, std::nullopt), "([1-9] [0-9]{3} | [1-9] [0-9]{4} [0-9]*)");
}

TEST(JsonSchemaRanges, IntegersAtTheLimitsOf64Bits) {
  auto grammar = compile_text("root ::= " + integer_range_gbnf(INT64_MIN, INT64_MAX) + "\n");
  ASSERT_NE(grammar, nullptr);
  EXPECT_TRUE(matches(grammar, "9223372036854775807"));
  EXPECT_FALSE(matches(grammar, "9223372036854775808"));
  EXPECT_TRUE(matches(grammar, "-9223372036854775808"));
  EXPECT_FALSE(matches(grammar, "-9223372036854775809"));
  EXPECT_TRUE(matches(grammar, "0"));
}

TEST(JsonSchemaRanges, NumbersWithIntegerBoundsAreExact) {
  // [-2, 3) and (-2, 3] on quarter steps, with and without a trailing zero.
  for (bool exclusive_low : {false, true}) {
    const NumberBound low{-2, exclusive_low};
    const NumberBound high{3, !exclusive_low};
    auto grammar = compile_text("root ::= " + number_range_gbnf(low, high) + "\n");
    ASSERT_NE(grammar, nullptr);
    for (int quarters = -16; quarters <= 20; ++quarters) {
      const double v = quarters / 4.0;
      const bool inside = (exclusive_low ? v > -2 : v >= -2) && (exclusive_low ? v <= 3 : v < 3);
      std::ostringstream text;
      text << v;
      ASSERT_EQ(matches(grammar, text.str()), inside) << text.str() << (exclusive_low ? " in (-2, 3]" : " in [-2, 3)");
      if (quarters % 4 == 0) {
        ASSERT_EQ(matches(grammar, text.str() + ".0"), inside) << text.str() << ".0";
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::grammar
