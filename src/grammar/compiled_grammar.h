#pragma once
// A grammar compiled against a vocabulary: immutable, shared by the matchers of every
// request (and thread) that uses it.
//
// The grammar is flattened into positions (one per element of every alternative, and
// one for the end of each alternative). For every character-class position p the
// compiler walks the token trie once and sorts each matchable token into
//   accepted:  some path consumes all its bytes without leaving the rule instance
//              that holds p (so whatever lies below p on the stack, it is allowed);
//   rejected:  every path dies, even when the rule's end is followed by anything that
//              can follow that rule anywhere in the grammar;
//   uncertain: the rest (its bytes run past the end of p's rule); only these are
//              checked against the real stacks at run time.
// Before classifying, the compiler drops alternatives that can never complete, inlines
// small non-recursive rules (so that fewer tokens cross a rule's end; a bounded
// repetition's levels stay rules) and gives one token set to positions whose walks
// cannot differ within a token's length. The copies of one element of a bounded
// repetition (X{m,n}: a chain of n - m levels) are classified by one walk for all of
// them (repetition_chain.h). Classification walks are spread over threads when there
// is enough work.
// A VocabIndex with zero tokens is fine: the matcher then matches bytes only.

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "grammar/grammar.h"
#include "grammar/vocab_index.h"

namespace pagoda::grammar {

namespace detail {
struct CompiledData;  // compiled_grammar_internal.h
}

struct CompileStats {
  int32_t n_positions = 0;        // character-class positions
  int32_t n_classified = 0;       // distinct token sets (positions alike share one)
  int32_t n_walks = 0;            // trie walks over the vocabulary (a repetition's copies share one)
  int64_t n_rewalked = 0;         // tokens walked again at each copy (at the top copy they hit a bound)
  int64_t n_accepted = 0;         // token classifications, summed over the distinct sets
  int64_t n_rejected = 0;
  int64_t n_uncertain = 0;
  int32_t max_uncertain = 0;      // largest uncertain set of one position
  int32_t max_stack_growth = 0;   // deepest a token's walk from one position grew the stack
  double compile_ms = 0;
};

class CompiledGrammar {
 public:
  explicit CompiledGrammar(std::unique_ptr<detail::CompiledData> data);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const Grammar& grammar() const;
  const VocabIndex& vocab() const;
  const std::shared_ptr<const VocabIndex>& vocab_ptr() const;
  const CompileStats& stats() const;

  const detail::CompiledData& data() const { return *data_; }

 private:
  std::unique_ptr<detail::CompiledData> data_;
};

// Errors: the grammar does not validate (Grammar::validate), or it is too large.
Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const Grammar& grammar,
                                                                 std::shared_ptr<const VocabIndex> vocab);

}  // namespace pagoda::grammar
