#pragma once
// The compiler's token classification: per character-class position, which tokens are
// accepted whatever the stack, which are to be checked at run time (compiled_grammar.h),
// by a trie walk per position (classify_position) or, for the copies of one element of a
// bounded repetition, by one walk for all of them (classify_column,
// repetition_classifier.cpp).

#include <cstdint>
#include <vector>

#include "grammar/compiled_grammar_internal.h"
#include "grammar/repetition_chain.h"

namespace pagoda::grammar::detail {

enum class Verdict : uint8_t { kRejected, kUncertain, kAccepted };

// A token's verdict from the state after its last byte (the walk started at the
// classified position with kMarker below).
Verdict verdict_at_end(const StepResult& end);

// A walk's scratch, one per thread.
struct ClassifyScratch {
  std::vector<Node> nodes;
  TrieWalker walker;
  std::vector<Node> escape_nodes;
  Stepper escape_stepper;
  explicit ClassifyScratch(const CompiledData& d)
      : walker(d, nodes, /*lookahead=*/true), escape_stepper(d, escape_nodes, /*lookahead=*/true) {}
};

// The top of a walk from position p: p with nothing known below.
StepResult classified_start(uint32_t p);

// `out` from the accepted token ids (any order; list or bitmask, whichever is smaller)
// and the uncertain sorted indices (ascending).
void store_token_set(std::vector<int32_t> accepted, std::vector<int32_t> uncertain, int32_t n_vocab,
                     PositionTokens& out);

// Sorts every matchable token into accepted / rejected / uncertain at position p.
void classify_position(const CompiledData& d, uint32_t p, ClassifyScratch& scratch,
                       PositionTokens& out);

// A column's token sets: the distinct ones, and per level (RepetitionColumn::positions)
// the index of its set.
struct ColumnSets {
  std::vector<PositionTokens> sets;
  std::vector<int32_t> set_of_level;
};

// The token sets of every copy in `column`, from one walk at its top copy: the same sets
// as classify_position at each copy. Adds to `stats` the walks over the vocabulary made
// and the tokens walked again per copy.
void classify_column(const CompiledData& d, const RepetitionLevels& rep,
                     const RepetitionColumn& column, ClassifyScratch& scratch, ColumnSets& out,
                     CompileStats& stats);

}  // namespace pagoda::grammar::detail
