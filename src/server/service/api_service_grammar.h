#pragma once
// A request's output constraint, from its fields to the engine's GrammarConstraint:
//   1. request_grammar: the GBNF (and lazy triggers) of the request's output format
//      (response_format, guided_*, grammar, json_schema) and tools, through the grammar
//      library's front ends. A schema, regex or grammar they refuse is a 400 naming the
//      field, with their message.
//   2. GrammarCache::compile: the grammar parsed and compiled against the model's
//      VocabIndex, shared by every request with the same GBNF (a bounded LRU).
//
// Tools with a format: see server/tools/tool_grammar.h (the format applies to a text
// answer; "required" and a named function ignore it). A format given as GBNF
// (guided_grammar, grammar) with tools that may be called is refused (400 on the
// format's field): its rule names could clash with the tools' rules.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/grammar_constraint.h"
#include "grammar/compiled_grammar.h"
#include "grammar/vocab_index.h"
#include "server/openai/api_error.h"
#include "server/openai/openai_request.h"
#include "server/tools/tool_family.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

struct RequestGrammar {
  std::string gbnf;                   // root rule "root"
  std::vector<std::string> triggers;  // empty: from the first token
  std::string param;                  // the field it came from, for compile errors
};

// The control tokens of a vocabulary that are the family's call markers
// (tools::call_markers): grammars write them as text, and outputs show them.
std::vector<int32_t> control_call_markers(const tokenizer::Tokenizer& tokenizer,
                                          tools::ToolFamily family);

// nullopt when nothing constrains the output. `tools` may be null (completions).
ApiResult<std::optional<RequestGrammar>> request_grammar(const OutputFormat& format,
                                                         const ToolsRequest* tools,
                                                         tools::ToolFamily family);

// Compiled grammars by GBNF text, the least recently used dropped past `capacity`.
// Thread-safe; two requests that miss at once may both compile (the last one is kept).
class GrammarCache {
 public:
  using VocabSource =
      std::function<std::shared_ptr<const grammar::VocabIndex>(std::span<const int32_t> text_tokens)>;
  // `vocab` null: `make_vocab(shown_tokens)` builds it at the first compile (a server that
  // never constrains an output never pays for it). `shown_tokens`: control tokens the
  // vocabulary gives their text (engine::make_vocab_index's text_tokens), which every
  // constraint asks the request's output to show.
  GrammarCache(std::shared_ptr<const grammar::VocabIndex> vocab, size_t capacity,
               VocabSource make_vocab = {}, std::vector<int32_t> shown_tokens = {});

  // The constraint for `request`: errors are 400s naming request.param ("the grammar is
  // not valid: line 1, column 5: ...").
  ApiResult<std::shared_ptr<const engine::GrammarConstraint>> constraint(
      const RequestGrammar& request);

  size_t size() const;
  std::shared_ptr<const grammar::VocabIndex> vocab();

 private:
  using Compiled = std::shared_ptr<const grammar::CompiledGrammar>;
  std::optional<Compiled> find(const std::string& gbnf);
  void insert(const std::string& gbnf, Compiled compiled);

  std::shared_ptr<const grammar::VocabIndex> vocab_;  // guarded by mutex_
  VocabSource make_vocab_;
  std::vector<int32_t> shown_tokens_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, Compiled>> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<std::pair<std::string, Compiled>>::iterator> index_;
};

}  // namespace pagoda::server
