// Bounded repetitions: the token sets the compiler derives for all copies of a repeated
// element from one walk (repetition_chain.h) must be exactly the sets of a walk per
// copy, and the masks they give must equal the brute-force ones, for bounds below and
// above the longest token, bodies of several alternatives and of several characters,
// UTF-8 classes, ambiguous bodies whose walks hit the matcher's bounds, and repetitions
// that recurse into themselves; from GBNF, regex and JSON Schema.

#include <gtest/gtest.h>

#include <random>

#include "grammar/compiled_grammar_internal.h"
#include "grammar/json_schema.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using Json = nlohmann::ordered_json;

struct RepetitionCase {
  const char* name;
  std::string gbnf;
};

std::vector<RepetitionCase> repetition_cases() {
  std::vector<RepetitionCase> cases = {
      {"string_below_and_above", R"G(
root ::= "\"" ( [^"\\] | "\\" ( ["\\nt] | "u" [0-9a-f]{2} ) ){0,3} "\"" ( "," [a-c]{1,30} )?
)G"},
      {"bounded_utf8", R"G(
root ::= [α-ω]{2,17} "!" | "é"{0,40} ( [a-b] | "😀" ){1,6} "."
)G"},
      {"ambiguous_body", R"G(
root ::= "x" ( "ab" | "a" | [b-c]+ ){2,24} "." | ( "a" | "aa" | "a" "a"? ){0,60} "b"
)G"},
      {"recursive_body", R"G(
root ::= item ( "," item ){0,9}
item ::= "(" root? ")" | [0-9]{1,3} | "\"" [a-c]{0,5} "\""
)G"},
      {"long_bound", R"G(
root ::= ( [a-cx] | "é" ){3,40} "!"
)G"},
  };
  auto regex = regex_to_gbnf("[a-z]{2,25}(-[0-9]{1,4}){0,3}\"?");
  EXPECT_TRUE(regex.ok()) << regex.status().message();
  if (regex.ok()) cases.push_back({"regex", *regex});
  const Json schema = Json::parse(R"({"type": "object", "properties": {
      "s": {"type": "string", "maxLength": 10},
      "t": {"type": "string", "minLength": 2, "maxLength": 30},
      "u": {"type": ["string", "null"], "minLength": 1, "maxLength": 3},
      "a": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 4}},
      "required": ["s", "a"], "additionalProperties": false})");
  auto json = json_schema_to_gbnf(schema);
  EXPECT_TRUE(json.ok()) << json.status().message();
  if (json.ok()) cases.push_back({"json_schema", *json});
  return cases;
}

// Random tokens over the cases' characters, from 1 byte to `max_pieces` pieces (runs of
// one piece too: long tokens that cross a whole bound), and stray UTF-8 bytes.
std::shared_ptr<const VocabIndex> long_token_vocab(uint32_t seed, int32_t n, int max_pieces) {
  std::mt19937 rng(seed);
  const std::vector<std::string> pieces = {
      "a", "b", "c", "x", "ab",   "\"",   "\\",       "u",    "n",     "0",   "9", "f",
      "-", ",", ".", "!", "(",    ")",    "é",        "α",    "ω",     "😀",   " ", ":",
      "{", "}", "[", "]", "\xCE", "\xB1", "\xF0\x9F", "null", "\"s\"", "\\u0"};
  std::vector<std::string> tokens = {"", ""};  // a control token, a stop token
  for (int32_t i = 0; i < n; ++i) {
    std::string t;
    const int len =
        1 + static_cast<int>(rng() % static_cast<uint32_t>(rng() % 4 == 0 ? max_pieces : 4));
    const bool run = rng() % 5 == 0;
    const std::string& first = pieces[rng() % pieces.size()];
    for (int k = 0; k < len; ++k) t += run ? first : pieces[rng() % pieces.size()];
    tokens.push_back(t);
  }
  return VocabIndex::create(tokens, {1});
}

// derive: as compile_grammar does; else a walk per position (nothing shared, nothing
// derived: what the sets must be).
std::shared_ptr<const CompiledGrammar> compile(const Grammar& g,
                                               std::shared_ptr<const VocabIndex> vocab,
                                               bool derive) {
  auto c = detail::compile_grammar(g, std::move(vocab), detail::CompileOptions{derive, derive});
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : nullptr;
}

// Every position has the same token set.
void expect_same_sets(const CompiledGrammar& derived, const CompiledGrammar& walked) {
  EXPECT_EQ(testing::token_sets_mismatch(derived, walked), "");
  EXPECT_EQ(derived.stats().n_positions, walked.stats().n_positions);
  EXPECT_EQ(walked.stats().n_walks, walked.stats().n_classified);
}

TEST(RepetitionSets, DerivedSetsEqualOneWalkPerCopy) {
  int32_t derived_cases = 0;
  for (const RepetitionCase& c : repetition_cases()) {
    auto g = parse_gbnf(c.gbnf);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.status().message();
    for (uint32_t v = 0; v < 4; ++v) {
      SCOPED_TRACE(std::string(c.name) + " vocabulary " + std::to_string(v));
      auto vocab = long_token_vocab(50 + v, 300 + 200 * static_cast<int32_t>(v),
                                    8 + 20 * static_cast<int>(v));
      auto derived = compile(*g, vocab, true);
      auto walked = compile(*g, vocab, false);
      ASSERT_TRUE(derived && walked);
      expect_same_sets(*derived, *walked);
      if (HasFatalFailure()) return;
      EXPECT_LE(derived->stats().n_walks, walked->stats().n_walks);
      derived_cases += derived->stats().n_walks < walked->stats().n_walks;
    }
  }
  EXPECT_EQ(derived_cases, 28);
}

TEST(RepetitionSets, MaskEqualsBruteForceAlongRandomWalks) {
  std::mt19937 rng(2024);
  for (const RepetitionCase& c : repetition_cases()) {
    for (uint32_t v = 0; v < 3; ++v) {
      SCOPED_TRACE(std::string(c.name) + " vocabulary " + std::to_string(v));
      auto vocab = long_token_vocab(900 + v, 250, 6 + 16 * static_cast<int>(v));
      auto g = testing::compile_gbnf(c.gbnf, vocab);
      ASSERT_NE(g, nullptr);
      for (int walk = 0; walk < 6; ++walk) {
        GrammarMatcher m(g);
        for (int step = 0; step < 24; ++step) {
          const auto fast = testing::fast_mask(m);
          ASSERT_EQ(testing::mask_mismatch(m, fast), "") << "walk " << walk << " step " << step;
          std::vector<int32_t> allowed;
          for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
            if ((fast[id / 32] >> (id % 32)) & 1) allowed.push_back(id);
          }
          if (allowed.empty()) break;
          if (!m.accept_token(allowed[rng() % allowed.size()])) {
            ASSERT_TRUE(m.exceeded_bounds());
            break;
          }
          if (m.is_terminated()) break;
        }
      }
    }
  }
}

// A body that can match in several ways: after a run of 'a's the copies still alive
// span many levels, past the compiler's bound on stacks, so the top copy's walk cannot
// speak for the others and those tokens are walked at each copy.
TEST(RepetitionSets, TokensAtTheBoundAreWalkedPerCopy) {
  auto g = parse_gbnf(R"(root ::= ( "a" | "aa" | "a" "a"? "a"? ){0,90} "b")");
  ASSERT_TRUE(g.ok());
  std::vector<std::string> runs = {"a", "b", "ab"};
  for (int n = 2; n <= 80; n += 6) runs.push_back(std::string(static_cast<size_t>(n), 'a'));
  std::vector<std::string> tokens = runs;
  for (int i = 0; i < 200; ++i) {  // rejected at every copy
    std::string t = std::to_string(i);
    t.push_back('b');
    tokens.push_back(std::move(t));
  }
  auto derived = compile(*g, VocabIndex::create(tokens, {}), true);
  auto walked = compile(*g, VocabIndex::create(tokens, {}), false);
  ASSERT_TRUE(derived && walked);
  expect_same_sets(*derived, *walked);
  EXPECT_GT(derived->stats().n_rewalked, 0);
  EXPECT_EQ(walked->stats().n_rewalked, 0);
  EXPECT_LT(derived->stats().n_walks, walked->stats().n_walks);
  EXPECT_GT(derived->stats().n_uncertain, 0);

  // Where most tokens hit the bound, every copy is walked instead (up to the copies the
  // longest token cannot tell apart; more walks than positions alike by signature take).
  derived = compile(*g, VocabIndex::create(runs, {}), true);
  walked = compile(*g, VocabIndex::create(runs, {}), false);
  ASSERT_TRUE(derived && walked);
  expect_same_sets(*derived, *walked);
  EXPECT_EQ(derived->stats().n_rewalked, 0);
  EXPECT_GT(derived->stats().n_walks, 80);
}

// What the compile time hangs on: a long bounded string takes a walk per element of its
// character rule, not per copy, and so does a second string of another bound.
TEST(RepetitionSets, BoundedStringsTakeAWalkPerElement) {
  const Json schema = Json::parse(R"({"type": "object", "properties": {
      "a": {"type": "string", "maxLength": 200},
      "b": {"type": "string", "minLength": 3, "maxLength": 120}},
      "required": ["a", "b"], "additionalProperties": false})");
  auto text = json_schema_to_gbnf(schema);
  ASSERT_TRUE(text.ok()) << text.status().message();
  auto g = parse_gbnf(*text);
  ASSERT_TRUE(g.ok());
  auto vocab = long_token_vocab(7, 2000, 40);
  auto derived = compile(*g, vocab, true);
  ASSERT_TRUE(derived);
  // Each string's character (the character rule's eight class elements) has a copy per
  // level.
  EXPECT_GT(derived->stats().n_positions, 8 * (200 + 117));
  EXPECT_LT(derived->stats().n_walks, derived->stats().n_positions / 4);
  auto walked = compile(*g, vocab, false);
  ASSERT_TRUE(walked);
  expect_same_sets(*derived, *walked);
}

// The chain's bottom level is rewritten to hold its body inline (the language is the
// same): what the grammar matches is unchanged.
TEST(RepetitionSets, BoundsStillHold) {
  auto g =
      testing::compile_gbnf(R"(root ::= "<" ( [a-c] | "x" [0-9] ){2,5} ">")",
                            VocabIndex::create({"a", "x1", "<", ">", "<ab", "c>", "abcab"}, {}));
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(testing::matches(g, "<a>"));
  EXPECT_TRUE(testing::matches(g, "<ab>"));
  EXPECT_TRUE(testing::matches(g, "<x1x2cba>"));
  EXPECT_TRUE(testing::matches(g, "<abcab>"));
  EXPECT_FALSE(testing::matches(g, "<abcabc>"));
  EXPECT_FALSE(testing::matches(g, "<x1x2x3x4x5x6>"));
  EXPECT_FALSE(testing::accepts(g, "<abcabc"));
}

}  // namespace
}  // namespace pagoda::grammar
