#pragma once
// Helpers of the grammar engine's tests: compile GBNF text, and the brute-force token
// mask (every token tried on a copy of the matcher) the fast mask must equal.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/compiled_grammar_internal.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace pagoda::grammar::testing {

inline std::shared_ptr<const CompiledGrammar> compile_gbnf(const std::string& text,
                                                           std::shared_ptr<const VocabIndex> vocab = nullptr) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return nullptr;
  if (!vocab) vocab = VocabIndex::create({}, {});
  auto c = compile_grammar(*g, vocab);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? *c : nullptr;
}

// true when the whole text is accepted (in one call) from a fresh matcher.
inline bool accepts(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text);
}
// true when the text is a complete sentence.
inline bool matches(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_terminate();
}

inline std::vector<uint32_t> fast_mask(const GrammarMatcher& m) {
  std::vector<uint32_t> mask(bitmask_words(m.grammar().vocab().n_vocab()), 0xDEADBEEFu);
  m.fill_next_token_bitmask(mask);
  return mask;
}

// Every token tried with accept_token on a copy. bound_hit: the tokens rejected only
// because a bound was hit (GrammarMatcher::exceeded_bounds()).
inline std::vector<uint32_t> brute_force_mask(const GrammarMatcher& m, std::vector<uint32_t>* bound_hit = nullptr) {
  const int32_t n = m.grammar().vocab().n_vocab();
  std::vector<uint32_t> mask(bitmask_words(n), 0);
  if (bound_hit) bound_hit->assign(bitmask_words(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    GrammarMatcher copy = m;
    if (copy.accept_token(id)) {
      mask[id / 32] |= 1u << (id % 32);
    } else if (bound_hit && copy.exceeded_bounds()) {
      (*bound_hit)[id / 32] |= 1u << (id % 32);
    }
  }
  return mask;
}

inline std::string describe_mask_diff(const GrammarMatcher& m, const std::vector<uint32_t>& fast,
                                      const std::vector<uint32_t>& brute) {
  std::string out;
  const VocabIndex& v = m.grammar().vocab();
  for (int32_t id = 0; id < v.n_vocab(); ++id) {
    const bool f = (fast[id / 32] >> (id % 32)) & 1;
    const bool b = (brute[id / 32] >> (id % 32)) & 1;
    if (f != b) {
      out += "token " + std::to_string(id) + " '" + std::string(v.token_bytes(id)) + "': fast " + (f ? "1" : "0") +
             " brute " + (b ? "1" : "0") + "\n";
    }
  }
  return out;
}

// Empty when the fast mask equals the brute-force one, except that a token the fast
// mask allows may be rejected for a bound (the documented imprecision at the bounds);
// else what differs.
inline std::string mask_mismatch(const GrammarMatcher& m, const std::vector<uint32_t>& fast) {
  std::vector<uint32_t> bound_hit;
  std::vector<uint32_t> brute = brute_force_mask(m, &bound_hit);
  for (size_t w = 0; w < brute.size(); ++w) brute[w] |= fast[w] & bound_hit[w];
  return fast == brute ? std::string() : describe_mask_diff(m, fast, brute);
}

// The accepted token ids of a position's set, ascending, whichever way it is stored.
inline std::vector<int32_t> accepted_ids(const detail::PositionTokens& s) {
  if (s.accepted_bits.empty()) return s.accepted;
  std::vector<int32_t> ids;
  for (size_t w = 0; w < s.accepted_bits.size(); ++w) {
    for (uint32_t b = 0; b < 32; ++b) {
      if ((s.accepted_bits[w] >> b) & 1u) ids.push_back(static_cast<int32_t>(w * 32 + b));
    }
  }
  return ids;
}

// Empty when every position of the two compilations of one grammar has the same token
// set (the sets may be shared differently), else the first position that differs.
inline std::string token_sets_mismatch(const CompiledGrammar& x, const CompiledGrammar& y) {
  const detail::CompiledData& a = x.data();
  const detail::CompiledData& b = y.data();
  if (a.positions.size() != b.positions.size()) return "different positions";
  for (size_t p = 0; p < a.positions.size(); ++p) {
    const int32_t sa = a.token_set_of[p];
    const int32_t sb = b.token_set_of[p];
    if ((sa < 0) != (sb < 0)) return "position " + std::to_string(p) + ": classified in one only";
    if (sa < 0) continue;
    const detail::PositionTokens& ta = a.token_sets[sa];
    const detail::PositionTokens& tb = b.token_sets[sb];
    if (ta.accepted_bits.empty() != tb.accepted_bits.empty() || accepted_ids(ta) != accepted_ids(tb)) {
      return "position " + std::to_string(p) + ": accepted tokens differ";
    }
    if (ta.uncertain != tb.uncertain) return "position " + std::to_string(p) + ": uncertain tokens differ";
  }
  return {};
}

}  // namespace pagoda::grammar::testing
