#pragma once
// Bounded repetitions as the compiler sees them, so that their positions are classified
// by one trie walk per element of the repeated body instead of one per copy.
//
// X{0,n} is a chain of helper rules (Grammar::append_repetition), one per level:
//   h(n) ::= X h(n-1) | ;  ...  h(2) ::= X h(1) | ;  h(1) ::= X |
// A position of X in h(k) differs from its copies in the other levels only by how many
// copies of X may still come (k - 1), and a token sees the difference only when it
// runs that far. So the compiler walks each token once from the copy in the top level
// and tags what the walk reaches with its level (d = 0 in the top level, 1 below it,
// ...): a path whose top is at level d needs the classified copy to have at least d + 1
// levels, a path that leaves the chain through an empty alternative at level d needs d
// (in a copy of d levels that is its bottom's X followed by the bottom's end). From the
// least such need of each token, the token sets of every level follow
// (repetition_classifier.cpp). The levels stay rules (the compiler inlines no level into
// the repetition's host, which would make one more copy to walk).
//
// For a level's copy to behave as the top's copy cut short, every level must hold the
// same alternatives (after inlining) but for their last reference to the next level,
// and an empty alternative. The bottom level, X | (empty), is checked to match what the
// level above would without that reference (before inlining), and after inlining gets
// the level above's alternatives with that reference replaced by one to a rule of the
// empty string added for the chain (the same language; its end stands for the empty
// alternative of the level below the bottom).

#include <climits>
#include <cstdint>
#include <vector>

#include "grammar/compiled_grammar_internal.h"
#include "grammar/grammar.h"

namespace pagoda::grammar::detail {

constexpr uint32_t kNoPosition = UINT32_MAX;

struct RepetitionChain {
  std::vector<int32_t> rules;  // per level, from the top (level 0) to the bottom
  int32_t end_rule = -1;  // the bottom's next level: the empty string (align_repetition_chains)
};

// Chains of at least two levels in the rules' alternatives before inlining; a rule is in
// at most one chain.
std::vector<RepetitionChain> find_repetition_chains(const std::vector<std::vector<Sequence>>& alts);

// After inlining: gives every level of a chain the same alternatives (one level's, as
// inlined, each leading to its own next level), adds each chain's end rule (to `alts`)
// as the bottom level's next (the language the bottom had: find_repetition_chains
// checked that before inlining).
void align_repetition_chains(std::vector<std::vector<Sequence>>& alts,
                             std::vector<RepetitionChain>& chains);

// The positions of one class element of the repeated body: one per level, top first.
struct RepetitionColumn {
  std::vector<uint32_t> positions;
  int32_t top_rule = 0;  // the chain's top level (its follow is every level's)
  // Copies with at least this many levels (counted from the bottom's 1) are classified
  // alike: no token reaches the bottom from them (every level's body matches at least a
  // character, and the longest token has fewer). INT32_MAX: not known.
  int32_t alike_from = INT32_MAX;
};

struct RepetitionLevels {
  // Per position: its level in its chain, and at an end the level a clean pop there
  // stands for (the end rule's: one past the bottom); -1 outside chains.
  std::vector<int32_t> level;
  std::vector<RepetitionColumn> columns;
  // Per position: the column that holds it, -1 when none.
  std::vector<int32_t> column_of;
  // Per position of a chain whose bodies all match a character: the same position in
  // the top level (kNoPosition elsewhere), and the levels from its own to the bottom.
  // What a walk sees from either within fewer characters than that is the same.
  std::vector<uint32_t> top_copy;
  std::vector<int32_t> levels_to_bottom;
};

// The columns of the chains after the positions are laid out: levels of rules that are
// not reachable are dropped from the top; a chain left with fewer than two levels, or
// whose levels may be followed by different positions, is dropped.
RepetitionLevels repetition_levels(const CompiledData& d,
                                   const std::vector<RepetitionChain>& chains,
                                   const std::vector<char>& reachable);

}  // namespace pagoda::grammar::detail
