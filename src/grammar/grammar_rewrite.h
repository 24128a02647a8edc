#pragma once
// The compiler's rewrites of a grammar before it is flattened into positions
// (compiled_grammar.cpp): each keeps the language and makes the token sets cheaper.

#include <cstdint>
#include <vector>

#include "grammar/compiled_grammar_internal.h"
#include "grammar/grammar.h"

namespace pagoda::grammar::detail {

// A class's ranges sorted, merged, negation resolved, surrogates removed.
std::vector<CharRange> normalize_ranges(const Element& e);
// The class as the matcher tests it: its ranges and the lead bytes that can start one.
CharClassData make_class(const Element& e);
// Per rule: whether it can match some finite string.
std::vector<char> productive_rules(const Grammar& g);
// Inlines references to small rules that are not recursive, so that runs of characters
// stay inside one rule (fewer tokens cross a rule's end, fewer uncertain tokens). The
// language is unchanged; the positions added are bounded. Rules marked in `keep` (per
// rule) are not inlined.
void inline_small_rules(std::vector<std::vector<Sequence>>& alts, int32_t root, const std::vector<char>& keep);

}  // namespace pagoda::grammar::detail
