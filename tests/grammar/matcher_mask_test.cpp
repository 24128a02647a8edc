// The key correctness test of the grammar engine: the fast token bitmask (precomputed
// sets plus the run-time walk) must equal the brute-force one (every token tried with
// accept_token on a copy of the matcher), for several grammars, at every step of
// accepted strings and of random walks, on a hand-made vocabulary and random ones.

#include <gtest/gtest.h>

#include <random>

#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using testing::brute_force_mask;
using testing::compile_gbnf;
using testing::describe_mask_diff;
using testing::fast_mask;

const char* kJsonGrammar = R"G(
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
)G";

// Rules that end after every character: most tokens are left to the run-time check.
const char* kCharRuleGrammar = R"G(
root ::= item+ end
item ::= char | "\\" esc
char ::= [a-c] | "é" | "α"
esc  ::= [nt"]
end  ::= "!" | "?" "?"?
)G";

const char* kNestedGrammar = R"G(
root ::= group*
group ::= "(" group* ")" | "[" group* "]" | "x"
)G";

const char* kAmbiguousGrammar = R"G(
root ::= a | b | c
a ::= "x"* "y"
b ::= "x"+ [a-z]
c ::= ( "x" | "xx" )+ "z"
)G";

const char* kUtf8Grammar = R"G(
root ::= [α-ω]+ "!" | [^a-z]{2,4} | "😀" "é"* | [\U0001F600-\U0001F64F]+ "."
)G";

const char* kBoundsGrammar = R"G(
root ::= [0-9]{2,3} ( "," [0-9]{1,2} )* ";" ("ab"){0,2} "c"{3}
)G";

const char* kNullableGrammar = R"G(
root ::= a b c "x" tail
a ::= "a"?
b ::= "b"*
c ::= "" | a
tail ::= "t" tail | ""
)G";

// JSON written with a rule per character (the compiler inlines them).
const char* kJsonCharRuleGrammar = R"G(
root   ::= value
value  ::= object | array | string | number | "true" | "null"
object ::= "{" ws ( member ( ws "," ws member )* )? ws "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* )? ws "]"
string ::= "\"" char* "\""
char   ::= [^"\\] | "\\" escape
escape ::= ["\\nt] | "u" hex hex
hex    ::= [0-9a-f]
number ::= int ( "." digit+ )?
int    ::= "-"? ( "0" | [1-9] digit* )
digit  ::= [0-9]
ws     ::= ( " " | "\n" )*
)G";

// Every 'a' doubles the stacks: past GrammarMatcher::kMaxStacks bytes are rejected, and
// the mask must say the same.
const char* kExplodingGrammar = R"G(
root ::= s "!"
s ::= "a" s "b" | "a" s "c" | ""
)G";

// Positions alike within a token's reach share one token set.
const char* kLongBoundGrammar = R"G(
root ::= ( [a-cx] | "é" ){3,40} "!"
)G";

// Bounded repetitions (one walk classifies every level: repetition_chain.h), with bounds
// below and above the longest token, bodies of several characters, UTF-8 classes.
const char* kBoundedStringGrammar = R"G(
root ::= "\"" ( [^"\\] | "\\" ( ["\\nt] | "u" [0-9a-f]{2} ) ){0,3} "\"" ( "," [a-cé]{1,30} )*
)G";

const char* kBoundedUtf8Grammar = R"G(
root ::= [α-ω]{2,5} "!" | "é"{1,9} [a-c]{0,2}
)G";

std::shared_ptr<const VocabIndex> hand_vocab() {
  std::vector<std::string> t = {
      "",       // 0: control
      "a",      "b",        "c",  "x",   "y",   "z",   "ab",   "abc", "xx",   "xy",  "\"",   "\\",  "\\n",
      "\":",    "{\"",      "\"}", "[",  "]",   "(",   ")",    "{",   "}",    ",",   ":",    " ",   "\n",
      "true",   "1",        "12", "0.5", "-",   "e+",  "!",    "?",   "é",    "α",   "αβ",   "\xCE", "\xB1",
      "\xF0\x9F", "\x98\x80", "😀", "ω!", "\xC3", "\xA9", "t",  "tt",  "\",\"", "\":\"",
      "",       // control
      "<eos>",  // stop
      ";",      ";ab", "ccc", "9", "99", "\t", "nul", "null", "fals", "e", "u00", "\\u", "zz",
  };
  const int32_t stop = 52;
  return VocabIndex::create(t, {stop});
}

// Random tokens: short strings over the grammar's characters and stray UTF-8 bytes.
std::shared_ptr<const VocabIndex> random_vocab(uint32_t seed, int32_t n) {
  std::mt19937 rng(seed);
  const std::vector<std::string> pieces = {"a",  "b",  "c",  "x",  "y",    "z",    "\"",   "\\", "n",  "t",  "u",
                                           "{",  "}",  "[",  "]",  "(",    ")",    ",",    ":",  " ",  "\n", "0",
                                           "1",  "9",  ".",  "e",  "-",    "+",    "!",    "?",  ";",  "é",  "α",
                                           "ω",  "😀", "\xCE", "\xB1", "\xF0", "\x9F", "\x98", "\x80", "tr", "ue",
                                           "null", "f", "l", "s", "\x01", "\xFF", "\xC0\x80", "\xED\xA0\x80", "aaaa"};
  std::vector<std::string> tokens;
  std::vector<int32_t> stops;
  for (int32_t i = 0; i < n; ++i) {
    const uint32_t kind = rng() % 20;
    if (kind == 0) {
      tokens.emplace_back();  // control
      if (rng() % 2 == 0) stops.push_back(i);
      continue;
    }
    std::string s;
    const int len = 1 + static_cast<int>(rng() % (kind < 3 ? 8 : 4));
    for (int k = 0; k < len; ++k) s += pieces[rng() % pieces.size()];
    tokens.push_back(s);
  }
  return VocabIndex::create(tokens, stops);
}

void expect_masks_equal(const GrammarMatcher& m, const std::string& where) {
  const auto fast = fast_mask(m);
  const auto brute = brute_force_mask(m);
  ASSERT_EQ(fast, brute) << where << "\n" << describe_mask_diff(m, fast, brute);
}

// Accepts `text` in pieces (each piece a token if the vocabulary has it, else raw
// bytes), comparing the masks before each piece.
void check_along(const std::shared_ptr<const CompiledGrammar>& g, const std::string& text, uint32_t seed) {
  std::mt19937 rng(seed);
  GrammarMatcher m(g);
  size_t i = 0;
  while (i < text.size()) {
    expect_masks_equal(m, "before byte " + std::to_string(i) + " of '" + text + "'");
    if (::testing::Test::HasFatalFailure()) return;
    const size_t n = std::min<size_t>(text.size() - i, 1 + rng() % 3);
    ASSERT_TRUE(m.accept_bytes(text.substr(i, n))) << "'" << text << "' at " << i;
    i += n;
  }
  expect_masks_equal(m, "after '" + text + "'");
}

// Random walks: at every step the masks agree; the next token is drawn from the mask;
// now and then a rollback, after which the mask must be what it was.
void random_walks(const std::shared_ptr<const CompiledGrammar>& g, uint32_t seed, int walks, int max_steps) {
  std::mt19937 rng(seed);
  const int32_t n = g->vocab().n_vocab();
  for (int w = 0; w < walks; ++w) {
    GrammarMatcher m(g);
    std::vector<std::vector<uint32_t>> masks;
    for (int step = 0; step < max_steps; ++step) {
      const auto fast = fast_mask(m);
      const auto brute = brute_force_mask(m);
      ASSERT_EQ(fast, brute) << "walk " << w << " step " << step << "\n" << describe_mask_diff(m, fast, brute);
      if (!masks.empty() && rng() % 8 == 0) {
        const int32_t back = 1 + static_cast<int32_t>(rng() % std::min<size_t>(masks.size(), 3));
        m.rollback(back);
        const auto expect = masks[masks.size() - back];
        masks.resize(masks.size() - back);
        ASSERT_EQ(fast_mask(m), expect) << "after rollback " << back;
        continue;
      }
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < n; ++id) {
        if ((fast[id / 32] >> (id % 32)) & 1) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      const int32_t tok = allowed[rng() % allowed.size()];
      masks.push_back(fast);
      ASSERT_TRUE(m.accept_token(tok));
      if (m.is_terminated()) {
        EXPECT_FALSE(m.accept_token(tok));
        break;
      }
    }
  }
}

struct GrammarCase {
  const char* name;
  const char* gbnf;
  std::vector<std::string> sentences;
};

std::vector<GrammarCase> cases() {
  return {
      {"json", kJsonGrammar,
       {R"({"a": [1, 2.5e+3, "x\"y"], "b": {"c": null}})", " [true, false, -0.5, \"\\u00e9α😀\"] ",
        R"({"k":"v","l":[[],{}]})"}},
      {"char_rule", kCharRuleGrammar, {"abc!", "a\\nbé??", "αα\\\"?"}},
      {"nested", kNestedGrammar, {"(x[x])x", "([([])])", ""}},
      {"ambiguous", kAmbiguousGrammar, {"xxxy", "xxq", "xxxxxz", "y"}},
      {"utf8", kUtf8Grammar, {"αβω!", "ÉÉÉ", "12", "😀ééé", "😀😁."}},
      {"bounds", kBoundsGrammar, {"12,3,45;ababccc", "123;ccc"}},
      {"nullable", kNullableGrammar, {"x", "abbxttt", "aax", "bx"}},
      {"json_char_rule", kJsonCharRuleGrammar, {R"({"a\nb": [1, -0.5, "\u00"], "é": {}})", "[ null ,true ]"}},
      {"exploding", kExplodingGrammar, {"aabc!", "aaaaaaaacbbbbbbb!"}},
      {"long_bound", kLongBoundGrammar, {"abc!", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "éxéxéxéxéxéxéxéxéxéxéxé!"}},
      {"bounded_string", kBoundedStringGrammar,
       {"\"ab\"", "\"\\n\\u0a\"", "\"\",abc,ééé", "\"a\",abcabcabcabcabcabcabcabcabcabc"}},
      {"bounded_utf8", kBoundedUtf8Grammar, {"αβ!", "αβγδε!", "ééé", "éééééééééab"}},
  };
}

TEST(GrammarMaskEquivalence, HandVocabularyAlongSentences) {
  for (const GrammarCase& c : cases()) {
    SCOPED_TRACE(c.name);
    auto g = compile_gbnf(c.gbnf, hand_vocab());
    ASSERT_NE(g, nullptr);
    for (size_t i = 0; i < c.sentences.size(); ++i) {
      check_along(g, c.sentences[i], static_cast<uint32_t>(i));
      if (HasFatalFailure()) return;
      GrammarMatcher m(g);
      ASSERT_TRUE(m.accept_bytes(c.sentences[i]));
      EXPECT_TRUE(m.can_terminate()) << c.sentences[i];
    }
  }
}

TEST(GrammarMaskEquivalence, HandVocabularyRandomWalks) {
  uint32_t seed = 1;
  for (const GrammarCase& c : cases()) {
    SCOPED_TRACE(c.name);
    auto g = compile_gbnf(c.gbnf, hand_vocab());
    ASSERT_NE(g, nullptr);
    random_walks(g, seed++, 20, 40);
    if (HasFatalFailure()) return;
  }
}

TEST(GrammarMaskEquivalence, RandomVocabulariesRandomWalks) {
  for (uint32_t v = 0; v < 10; ++v) {
    auto vocab = random_vocab(100 + v, 200 + 37 * static_cast<int32_t>(v));
    uint32_t seed = 1000 * v;
    for (const GrammarCase& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + " vocabulary " + std::to_string(v));
      auto g = compile_gbnf(c.gbnf, vocab);
      ASSERT_NE(g, nullptr);
      random_walks(g, seed++, 8, 30);
      if (HasFatalFailure()) return;
      for (size_t i = 0; i < c.sentences.size(); ++i) {
        check_along(g, c.sentences[i], seed + static_cast<uint32_t>(i));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(GrammarMaskEquivalence, AlikePositionsShareTokenSets) {
  auto g = compile_gbnf(kLongBoundGrammar, hand_vocab());
  ASSERT_NE(g, nullptr);
  // The hand vocabulary's longest token has 4 bytes: positions more than 4 characters
  // from the bound's end look alike.
  EXPECT_GT(g->stats().n_positions, 70);
  EXPECT_LT(g->stats().n_classified * 3, g->stats().n_positions)
      << g->stats().n_classified << " of " << g->stats().n_positions;
}

TEST(GrammarMaskEquivalence, AtTheBoundOnStacks) {
  auto g = compile_gbnf(kExplodingGrammar, VocabIndex::create({"a", "aa", "b", "c", "!", "aaaa"}, {}));
  ASSERT_NE(g, nullptr);
  GrammarMatcher m(g);
  int steps = 0;
  while (m.accept_token(0)) {
    expect_masks_equal(m, "after " + std::to_string(++steps) + " a");
    if (HasFatalFailure()) return;
    ASSERT_LT(steps, 64);
  }
  // The byte that would pass the bound is out of the mask too.
  EXPECT_FALSE((fast_mask(m)[0] >> 0) & 1u);
  EXPECT_TRUE((fast_mask(m)[0] >> 2) & 1u);
}

}  // namespace
}  // namespace pagoda::grammar
