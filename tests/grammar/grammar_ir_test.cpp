#include <gtest/gtest.h>

#include "grammar/grammar.h"

namespace pagoda::grammar {
namespace {

TEST(GrammarIr, RuleNames) {
  Grammar g;
  EXPECT_EQ(g.add_rule("root"), 0);
  EXPECT_EQ(g.add_rule("root"), -1);
  EXPECT_EQ(g.add_rule("a_b"), -1);
  EXPECT_EQ(g.unique_rule_name("root"), "root-1");
  EXPECT_EQ(Grammar::sanitize_rule_name("a_b c"), "a-b-c");
  EXPECT_EQ(g.find_rule("root"), 0);
  EXPECT_EQ(g.find_rule("x"), -1);
}

}  // namespace
}  // namespace pagoda::grammar
