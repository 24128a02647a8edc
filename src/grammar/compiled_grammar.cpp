#include "grammar/compiled_grammar.h"

#include "grammar/compiled_grammar_internal.h"

namespace pagoda::grammar {

CompiledGrammar::CompiledGrammar(std::unique_ptr<detail::CompiledData> data) : data_(std::move(data)) {}
CompiledGrammar::~CompiledGrammar() = default;
const Grammar& CompiledGrammar::grammar() const { return data_->grammar; }
const VocabIndex& CompiledGrammar::vocab() const { return *data_->vocab; }
const std::shared_ptr<const VocabIndex>& CompiledGrammar::vocab_ptr() const { return data_->vocab; }
const CompileStats& CompiledGrammar::stats() const { return data_->stats; }

Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const Grammar& grammar,
                                                                 std::shared_ptr<const VocabIndex> vocab) {
  PAGODA_TRY(grammar.validate());
  (void)vocab;
  return unsupported("compile_grammar: not implemented yet");
}

}  // namespace pagoda::grammar
