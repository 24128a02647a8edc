// The choice front end: each choice matched exactly, quotes, backslashes, controls and
// UTF-8 included.
#include "grammar/choice_gbnf.h"

#include <gtest/gtest.h>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace pagoda::grammar {
namespace {

bool matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

TEST(ChoiceGbnf, WritesOneLiteralPerChoice) {
  const std::vector<std::string> choices = {"yes", "no", "say \"hi\"", "back\\slash", "two\nlines\t!", "caf\xC3\xA9"};
  EXPECT_EQ(choice_gbnf(choices),
            "root ::= \"yes\" | \"no\" | \"say \\\"hi\\\"\" | \"back\\\\slash\" | \"two\\nlines\\t!\" | \"caf\\u00E9\"\n");
  EXPECT_EQ(choice_gbnf(choices, "answer").substr(0, 11), "answer ::= ");
  EXPECT_EQ(gbnf_literal("a\x01[]"), "\"a\\x01[]\"");
}

TEST(ChoiceGbnf, MatchesExactlyTheChoices) {
  const std::vector<std::string> choices = {"positive", "negative", "neutral", "say \"hi\"", "back\\slash",
                                            "two\nlines", "\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80", "a[b]-^c"};
  auto grammar = parse_gbnf(choice_gbnf(choices));
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  for (const std::string& choice : choices) EXPECT_TRUE(matches(*compiled, choice)) << choice;
  for (const char* other : {"", "pos", "positivee", "Positive", "\"positive\"", "say hi", "back\\\\slash",
                            "two\\nlines", "neutral "}) {
    EXPECT_FALSE(matches(*compiled, other)) << other;
  }
  GrammarMatcher matcher(*compiled);
  ASSERT_TRUE(matcher.accept_bytes("ne"));
  EXPECT_FALSE(matcher.can_terminate());
  ASSERT_TRUE(matcher.accept_bytes("utral"));
  EXPECT_TRUE(matcher.is_completed());
}

TEST(ChoiceGbnf, NoChoicesMatchNothing) {
  EXPECT_EQ(choice_gbnf(std::vector<std::string>{}), "root ::= [^\\x00-\\U0010FFFF]\n");
  auto grammar = parse_gbnf(choice_gbnf(std::vector<std::string>{}));
  ASSERT_TRUE(grammar.ok()) << grammar.status().message();
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  EXPECT_FALSE(matches(*compiled, ""));
  EXPECT_FALSE(matches(*compiled, "a"));
  EXPECT_FALSE(matches(*compiled, "\xF4\x8F\xBF\xBF"));
}

}  // namespace
}  // namespace pagoda::grammar
