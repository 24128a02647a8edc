#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using testing::accepts;
using testing::compile_gbnf;
using testing::fast_mask;
using testing::matches;

bool bit(const std::vector<uint32_t>& mask, int32_t id) { return (mask[id / 32] >> (id % 32)) & 1u; }

TEST(GrammarMatcher, Literals) {
  auto g = compile_gbnf(R"G(root ::= "abc" | "abd")G");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(matches(g, "abc"));
  EXPECT_TRUE(matches(g, "abd"));
  EXPECT_FALSE(matches(g, "ab"));
  EXPECT_TRUE(accepts(g, "ab"));
  EXPECT_FALSE(accepts(g, "abe"));
  EXPECT_FALSE(accepts(g, "abcd"));
  EXPECT_FALSE(accepts(g, "x"));
}

TEST(GrammarMatcher, ClassesAndNegation) {
  auto g = compile_gbnf(R"G(root ::= [a-cx] [^0-9a-z] [^\n]*)G");
  EXPECT_TRUE(matches(g, "a_"));
  EXPECT_TRUE(matches(g, "xZ anything é"));
  EXPECT_FALSE(accepts(g, "d"));
  EXPECT_FALSE(accepts(g, "a5"));
  EXPECT_FALSE(accepts(g, "aq"));
  EXPECT_FALSE(accepts(g, "a_x\ny"));
}

TEST(GrammarMatcher, RepetitionBounds) {
  auto g = compile_gbnf(R"G(root ::= "x"{2,4} "-" [ab]{3} "-" "y"{2,} "-" "z"{0,1})G");
  EXPECT_TRUE(matches(g, "xx-aba-yy-"));
  EXPECT_TRUE(matches(g, "xxxx-bbb-yyyyyy-z"));
  EXPECT_FALSE(accepts(g, "x-"));
  EXPECT_FALSE(accepts(g, "xxxxx"));
  EXPECT_FALSE(accepts(g, "xx-ab-"));
  EXPECT_FALSE(accepts(g, "xx-abab"));
  EXPECT_FALSE(accepts(g, "xx-aaa-y-"));
  EXPECT_FALSE(accepts(g, "xx-aaa-yy-zz"));
}

TEST(GrammarMatcher, RecursionNestedParentheses) {
  auto g = compile_gbnf(R"G(
root ::= group*
group ::= "(" group* ")" | "[" group* "]"
)G");
  EXPECT_TRUE(matches(g, ""));
  EXPECT_TRUE(matches(g, "()[]"));
  EXPECT_TRUE(matches(g, "(([()])[])"));
  EXPECT_TRUE(accepts(g, "(([("));
  EXPECT_FALSE(matches(g, "(([("));
  EXPECT_FALSE(accepts(g, "(]"));
  EXPECT_FALSE(accepts(g, "())"));
  // Deep nesting: stacks grow with the input, one frame per level.
  std::string deep(2000, '(');
  deep += std::string(2000, ')');
  EXPECT_TRUE(matches(g, deep));
}

TEST(GrammarMatcher, Ambiguity) {
  auto g = compile_gbnf(R"G(
root ::= a | b
a ::= "x"* "y"
b ::= ( "x" | "xx" )+ "z"
)G");
  EXPECT_TRUE(matches(g, "xxxy"));
  EXPECT_TRUE(matches(g, "xxxxz"));
  EXPECT_TRUE(matches(g, "y"));
  EXPECT_FALSE(matches(g, "z"));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_bytes("xxxxxx"));
  EXPECT_FALSE(m.can_terminate());
  GrammarMatcher m2 = m;
  EXPECT_TRUE(m.accept_bytes("y"));
  EXPECT_TRUE(m2.accept_bytes("z"));
  EXPECT_TRUE(m.is_completed());
  EXPECT_TRUE(m2.is_completed());
}

TEST(GrammarMatcher, Utf8AcrossTokensAndInvalidUtf8) {
  // Tokens: 0 "\xCE" (α's first byte), 1 "\xB1" (its second), 2 "α", 3 "!", 4 "\xCF", 5 "\x89" (ω's second),
  // 6 "a", 7 "\xC0\x80" (overlong NUL), 8 "\xED\xA0\x80" (a surrogate), 9 "\xB1!", 10 "\xF0\x9F\x98", 11 "\x80"
  auto vocab = VocabIndex::create({"\xCE", "\xB1", "α", "!", "\xCF", "\x89", "a", "\xC0\x80", "\xED\xA0\x80",
                                   "\xB1!", "\xF0\x9F\x98", "\x80"},
                                  {});
  auto g = compile_gbnf(R"G(root ::= [α-ω]+ "!" | "😀" | [^a]{3})G", vocab);
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  auto mask = fast_mask(m);
  EXPECT_TRUE(bit(mask, 0));
  EXPECT_FALSE(bit(mask, 1));  // a lone continuation byte
  EXPECT_TRUE(bit(mask, 2));
  EXPECT_TRUE(bit(mask, 4));
  EXPECT_FALSE(bit(mask, 6));
  EXPECT_FALSE(bit(mask, 7));  // overlong
  EXPECT_FALSE(bit(mask, 8));  // surrogate
  EXPECT_TRUE(bit(mask, 10));
  ASSERT_TRUE(m.accept_token(0));  // half of α
  EXPECT_FALSE(m.can_terminate());
  mask = fast_mask(m);
  EXPECT_TRUE(bit(mask, 1));
  EXPECT_TRUE(bit(mask, 9));
  EXPECT_FALSE(bit(mask, 0));
  EXPECT_FALSE(bit(mask, 2));
  EXPECT_TRUE(bit(mask, 5));  // \xCE\x89 is U+0389: outside [α-ω], one character of [^a]{3}
  EXPECT_FALSE(m.accept_token(3));
  ASSERT_TRUE(m.accept_token(9));  // "\xB1!" completes α, then "!"
  EXPECT_TRUE(m.can_terminate());
  EXPECT_FALSE(m.is_completed());  // "α!" is also two characters of [^a]{3}
  ASSERT_TRUE(m.accept_bytes("\xCF"));
  EXPECT_FALSE(m.can_terminate());
  ASSERT_TRUE(m.accept_token(5));
  EXPECT_TRUE(m.is_completed());
  // [^a]{3} takes 3 characters of any length; the split 4-byte emoji is one.
  GrammarMatcher n(g);
  ASSERT_TRUE(n.accept_token(10));
  EXPECT_TRUE(n.accept_token(11));
  EXPECT_TRUE(n.can_terminate());  // "😀" alone is the literal alternative
  EXPECT_TRUE(n.accept_bytes("bc"));
  EXPECT_TRUE(n.is_completed());
  EXPECT_FALSE(accepts(g, "\xC0\x80"));
  EXPECT_FALSE(accepts(g, "\xED\xA0\x80"));
  EXPECT_FALSE(accepts(g, "\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_TRUE(matches(g, "\xF4\x8F\xBF\xBF" "bc"));
}

TEST(GrammarMatcher, StopAndControlTokens) {
  // 0 control, 1 stop, 2 "a", 3 "b"
  auto vocab = VocabIndex::create({"", "", "a", "b"}, {1});
  auto g = compile_gbnf(R"G(root ::= "a"+ "b"?)G", vocab);
  GrammarMatcher m(g);
  auto mask = fast_mask(m);
  EXPECT_EQ(mask, std::vector<uint32_t>{0b0100u});
  EXPECT_FALSE(m.accept_token(1));
  EXPECT_FALSE(m.accept_token(0));
  EXPECT_FALSE(m.accept_token(4));
  EXPECT_FALSE(m.accept_token(-1));
  ASSERT_TRUE(m.accept_token(2));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_FALSE(m.is_completed());
  EXPECT_EQ(fast_mask(m), std::vector<uint32_t>{0b1110u});
  ASSERT_TRUE(m.accept_token(3));
  EXPECT_TRUE(m.is_completed());
  EXPECT_EQ(fast_mask(m), std::vector<uint32_t>{0b0010u});
  ASSERT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.can_terminate());
  EXPECT_EQ(fast_mask(m), std::vector<uint32_t>{0u});
  EXPECT_FALSE(m.accept_token(2));
  EXPECT_FALSE(m.accept_bytes(""));
  m.rollback(1);
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.is_completed());
}

TEST(GrammarMatcher, BitmaskLayout) {
  std::vector<std::string> tokens(70, "z");
  tokens[33] = "a";
  tokens[69] = "b";
  auto g = compile_gbnf(R"G(root ::= [ab])G", VocabIndex::create(tokens, {}));
  GrammarMatcher m(g);
  std::vector<uint32_t> mask(4, 0xFFFFFFFFu);  // one word more than needed: zeroed
  m.fill_next_token_bitmask(mask);
  EXPECT_EQ(mask, (std::vector<uint32_t>{0u, 0b10u, 1u << 5, 0u}));
}

TEST(GrammarMatcher, RollbackAndReset) {
  auto vocab = VocabIndex::create({"{", "}", "\"", "a", "\":", "1", ","}, {});
  auto g = compile_gbnf(R"G(
root ::= "{" ( pair ( "," pair )* )? "}"
pair ::= "\"" [a-z]* "\":" [0-9]+
)G",
                        vocab);
  GrammarMatcher m(g);
  std::vector<std::vector<uint32_t>> masks{fast_mask(m)};
  const std::vector<int32_t> toks = {0, 2, 3, 4, 5, 6, 2, 4, 5, 1};
  for (int32_t t : toks) {
    ASSERT_TRUE(m.accept_token(t)) << t;
    masks.push_back(fast_mask(m));
  }
  EXPECT_TRUE(m.is_completed());
  EXPECT_EQ(m.rollback_depth(), 10);
  m.rollback(3);
  EXPECT_EQ(fast_mask(m), masks[7]);
  EXPECT_FALSE(m.can_terminate());
  ASSERT_TRUE(m.accept_token(4));
  ASSERT_TRUE(m.accept_token(5));
  ASSERT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.is_completed());
  m.rollback(10);
  EXPECT_EQ(fast_mask(m), masks[0]);
  EXPECT_EQ(m.rollback_depth(), 0);
  ASSERT_TRUE(m.accept_token(0));
  m.reset();
  EXPECT_EQ(fast_mask(m), masks[0]);
  EXPECT_EQ(m.rollback_depth(), 0);
  // The history keeps the last kMaxRollback tokens.
  auto many = compile_gbnf(R"G(root ::= "a"*)G", VocabIndex::create({"a"}, {}));
  GrammarMatcher k(many);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(k.accept_token(0));
  EXPECT_EQ(k.rollback_depth(), GrammarMatcher::kMaxRollback);
}

TEST(GrammarMatcher, CopiesAreIndependent) {
  auto vocab = VocabIndex::create({"a", "b", "c"}, {});
  auto g = compile_gbnf(R"G(root ::= ( "a" | "b" )* "c")G", vocab);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_token(0));
  GrammarMatcher copy = m;
  ASSERT_TRUE(copy.accept_token(2));
  EXPECT_TRUE(copy.is_completed());
  EXPECT_FALSE(m.can_terminate());
  EXPECT_EQ(fast_mask(m), std::vector<uint32_t>{0b111u});
  EXPECT_EQ(fast_mask(copy), std::vector<uint32_t>{0u});
  ASSERT_TRUE(m.accept_token(1));
  copy.rollback(1);
  EXPECT_EQ(fast_mask(copy), std::vector<uint32_t>{0b111u});
  // Many tokens: the node arena is compacted on the way; copies stay independent.
  GrammarMatcher long_run(g);
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(long_run.accept_token(i % 2));
  GrammarMatcher other = long_run;
  ASSERT_TRUE(long_run.accept_token(2));
  EXPECT_FALSE(other.can_terminate());
  EXPECT_TRUE(other.accept_token(0));
}

TEST(GrammarMatcher, EmptyVocabularyMatchesBytes) {
  auto g = compile_gbnf(R"G(root ::= "a" [0-9]+)G");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->vocab().n_vocab(), 0);
  GrammarMatcher m(g);
  std::vector<uint32_t> mask;
  m.fill_next_token_bitmask(mask);
  EXPECT_TRUE(m.accept_bytes("a1"));
  EXPECT_TRUE(m.accept_bytes("23"));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_FALSE(m.accept_bytes("x"));
  EXPECT_TRUE(m.can_terminate());
}

TEST(GrammarMatcher, PathologicalAmbiguityIsBounded) {
  // Every 'a' doubles the distinct stacks; past kMaxStacks a byte is rejected instead of
  // the state growing without bound.
  auto g = compile_gbnf(R"G(
root ::= s
s ::= "a" s "b" | "a" s "c" | ""
)G");
  GrammarMatcher m(g);
  int accepted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (accepted < 64 && m.accept_bytes("a")) ++accepted;
  EXPECT_GE(accepted, 8);
  EXPECT_LT(accepted, 64);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_TRUE(matches(g, "aaabcb"));
}

TEST(GrammarMatcher, CompileErrors) {
  auto g = parse_gbnf("root ::= \"a\"");
  ASSERT_TRUE(g.ok());
  Grammar bad = *g;
  bad.add_alternative(bad.root(), {Element::rule_ref(7)});
  auto c = compile_grammar(bad, VocabIndex::create({}, {}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "rule 'root' refers to rule 7, which does not exist");
  Grammar no_root;
  EXPECT_EQ(compile_grammar(no_root, nullptr).status().message(), "grammar has no root rule");
}

TEST(GrammarMatcher, OneCompiledGrammarManyThreads) {
  std::vector<std::string> tokens = {"{", "}", "\"", "a", "b", "\":", "1", ",", " ", "\"a", "\",\"", "12"};
  auto g = compile_gbnf(R"G(
root ::= "{" ( pair ( "," " "? pair )* )? "}"
pair ::= "\"" [a-z]* "\":" [0-9]+
)G",
                        VocabIndex::create(tokens, {}));
  ASSERT_NE(g, nullptr);
  const std::vector<int32_t> doc = {0, 9, 5, 11, 7, 8, 2, 3, 4, 5, 6, 7, 2, 5, 6, 1};
  std::vector<std::vector<uint32_t>> expected;
  {
    GrammarMatcher m(g);
    for (int32_t t : doc) {
      expected.push_back(fast_mask(m));
      ASSERT_TRUE(m.accept_token(t)) << t;
    }
    ASSERT_TRUE(m.is_completed());
  }
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 200; ++rep) {
        GrammarMatcher m(g);
        for (size_t i = 0; i < doc.size(); ++i) {
          if (fast_mask(m) != expected[i] || !m.accept_token(doc[i])) ++failures[t];
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace pagoda::grammar
