#include <gtest/gtest.h>

#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using testing::accepts;
using testing::compile_gbnf;
using testing::matches;

TEST(GrammarMatcher, Literals) {
  auto g = compile_gbnf(R"(root ::= "abc" | "abd")");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(matches(g, "abc"));
  EXPECT_TRUE(matches(g, "abd"));
  EXPECT_FALSE(matches(g, "ab"));
  EXPECT_TRUE(accepts(g, "ab"));
  EXPECT_FALSE(accepts(g, "abe"));
  EXPECT_FALSE(accepts(g, "abcd"));
  EXPECT_FALSE(accepts(g, "x"));
}

}  // namespace
}  // namespace pagoda::grammar
