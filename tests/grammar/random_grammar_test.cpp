// Random grammars: the fast mask equals the brute-force one along random walks, for
// grammars of shapes no hand-written test thought of (nested groups, repetitions,
// nullable rules, recursion, ambiguity); and mangled GBNF text parses or fails cleanly,
// and what parses prints and parses back to the same text.

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "grammar_test_util.h"

namespace pagoda::grammar {
namespace {

using testing::fast_mask;

// Not inlined: GCC 12 warns falsely (-Wrestrict) on the appends once they are.
[[gnu::noinline]] std::string random_item(std::mt19937& rng, int n_rules, int nesting);

[[gnu::noinline]] std::string random_sequence(std::mt19937& rng, int n_rules, int nesting) {
  std::string out;
  const int n = static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    out += ' ';
    out += random_item(rng, n_rules, nesting);
  }
  return out.empty() ? " \"\"" : out;
}

[[gnu::noinline]] std::string random_item(std::mt19937& rng, int n_rules, int nesting) {
  static const char* atoms[] = {"\"a\"", "\"b\"", "\"ab\"", "\"é\"", "[a-b]", "[^a]", ".", "[b-cé]", "\"\\\"\""};
  static const char* reps[] = {"", "", "", "*", "+", "?", "{0,2}", "{1,3}", "{2}", "{2,}", "{0,7}", "{3,9}"};
  std::string item;
  const uint32_t kind = rng() % 10;
  if (kind < 5) {
    item = atoms[rng() % std::size(atoms)];
  } else if (kind < 8 || nesting > 0) {
    item = "r";
    item += std::to_string(rng() % n_rules);
  } else {
    item = "(";
    item += random_sequence(rng, n_rules, nesting + 1);
    item += " |";
    item += random_sequence(rng, n_rules, nesting + 1);
    item += " )";
  }
  item += reps[rng() % std::size(reps)];
  return item;
}

std::string random_gbnf(std::mt19937& rng) {
  const int n_rules = 2 + static_cast<int>(rng() % 4);
  std::string text = "root ::= r0\n";
  for (int r = 0; r < n_rules; ++r) {
    text += "r";
    text += std::to_string(r);
    text += " ::=";
    const int alts = 1 + static_cast<int>(rng() % 3);
    for (int a = 0; a < alts; ++a) {
      if (a > 0) text += " |";
      text += random_sequence(rng, n_rules, 0);
    }
    text += "\n";
  }
  return text;
}

std::shared_ptr<const VocabIndex> small_vocab(std::mt19937& rng) {
  const char* pieces[] = {"a", "b", "c", "é", "\xC3", "\xA9", "\"", "x"};
  std::vector<std::string> tokens = {"", ""};  // a control token, a stop token
  for (int i = 0; i < 40; ++i) {
    std::string t;
    const int len = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < len; ++k) t += pieces[rng() % std::size(pieces)];
    tokens.push_back(t);
  }
  return VocabIndex::create(tokens, {1});
}

TEST(RandomGrammars, MaskEqualsBruteForce) {
  std::mt19937 rng(12345);
  int compiled = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const std::string text = random_gbnf(rng);
    auto g = parse_gbnf(text);
    if (!g.ok()) continue;  // left recursion, a root that never ends
    auto vocab = small_vocab(rng);
    auto c = compile_grammar(*g, vocab);
    ASSERT_TRUE(c.ok()) << text << c.status().message();
    ++compiled;
    for (int walk = 0; walk < 3; ++walk) {
      GrammarMatcher m(*c);
      std::string history;
      for (int step = 0; step < 12; ++step) {
        const auto fast = fast_mask(m);
        const std::string diff = testing::mask_mismatch(m, fast);
        ASSERT_EQ(diff, "") << text << "step " << step << " after " << history;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < vocab->n_vocab(); ++id) {
          if ((fast[id / 32] >> (id % 32)) & 1) allowed.push_back(id);
        }
        if (allowed.empty()) break;
        const int32_t pick = allowed[rng() % allowed.size()];
        history += '\'';
        history += vocab->token_bytes(pick);
        history += "' ";
        if (!m.accept_token(pick)) {
          ASSERT_TRUE(m.exceeded_bounds());
          break;
        }
        if (m.is_terminated()) break;
      }
    }
  }
  EXPECT_GT(compiled, 40);
}

// The token sets compile_grammar shares (positions alike, a bounded repetition's copies
// classified by one walk: repetition_chain.h) are those a walk per position gives, in
// grammars of every shape.
TEST(RandomGrammars, RepetitionSetsEqualOneWalkPerCopy) {
  std::mt19937 rng(4242);
  int derived = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const std::string text = random_gbnf(rng);
    auto g = parse_gbnf(text);
    if (!g.ok()) continue;
    auto vocab = small_vocab(rng);
    auto a = detail::compile_grammar(*g, vocab, detail::CompileOptions{true});
    auto b = detail::compile_grammar(*g, vocab, detail::CompileOptions{false, false});
    ASSERT_TRUE(a.ok() && b.ok()) << text;
    ASSERT_EQ(testing::token_sets_mismatch(**a, **b), "") << text;
    derived += (*a)->stats().n_walks < (*b)->stats().n_walks;
  }
  EXPECT_GT(derived, 20);
}

TEST(RandomGrammars, MangledTextParsesOrFailsCleanly) {
  std::mt19937 rng(777);
  const char* alphabet = "ab\"\\[]^-().*+?{},|:=# \n\txuU0123é";
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = random_gbnf(rng);
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, alphabet[rng() % std::strlen(alphabet)]); break;
        default: text[at] = alphabet[rng() % std::strlen(alphabet)]; break;
      }
    }
    auto g = parse_gbnf(text);
    if (!g.ok()) {
      EXPECT_EQ(g.status().message().rfind("line ", 0), 0u) << g.status().message();
      continue;
    }
    ++parsed;
    const std::string printed = to_gbnf(*g);
    auto again = parse_gbnf(printed, g->rule(g->root()).name);
    ASSERT_TRUE(again.ok()) << text << "\n--\n" << printed << again.status().message();
    EXPECT_EQ(to_gbnf(*again), printed);
  }
  EXPECT_GT(parsed, 30);
}

}  // namespace
}  // namespace pagoda::grammar
