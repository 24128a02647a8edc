#pragma once
// A request's output constraint: a compiled grammar (src/grammar/) whose token mask the
// sampler applies before every other stage, so the output is always a sentence of the
// grammar (JSON matching a schema, a regular expression, a choice, a tool call).
//
// With triggers, the constraint is lazy: the output is free until its text contains one
// of the trigger strings (a tool call's opening tag, say); from then on the grammar
// applies, and it must accept the text from the start of that trigger on. Without
// triggers it applies from the first generated token.
//
// When the grammar is complete (no further byte can follow), the request finishes with
// FinishReason::kStop; its end-of-generation tokens are allowed exactly when the
// grammar can end there.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pagoda::grammar {
class CompiledGrammar;
}  // namespace pagoda::grammar

namespace pagoda::engine {

struct GrammarConstraint {
  std::shared_ptr<const grammar::CompiledGrammar> grammar;  // never null
  std::vector<std::string> triggers = {};  // empty: constrained from the first token
  // Control tokens the grammar's vocabulary gives their text (make_vocab_index's
  // text_tokens): the request's output shows them, so that its text is the bytes the
  // grammar accepted and a tool call's marker reaches the parser.
  std::vector<int32_t> shown_tokens = {};
};

}  // namespace pagoda::engine
