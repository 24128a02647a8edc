#pragma once
// The output-constraint flags of `pagoda run`, `chat` and `bench --concurrency`:
//   --grammar-file FILE        a GBNF grammar (root rule "root")
//   --json-schema JSON         a JSON Schema, inline
//   --json-schema-file FILE    a JSON Schema, from a file
// at most one of them; compiled once for the model's vocabulary.

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "core/status.h"
#include "engine/grammar_constraint.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

struct GrammarArgs {
  std::string grammar_file;
  std::string json_schema;
  std::string json_schema_file;

  bool empty() const { return grammar_file.empty() && json_schema.empty() && json_schema_file.empty(); }
};

void add_grammar_options(CLI::App& command, GrammarArgs& args);

// The constraint the flags ask for, compiled for `tokenizer`'s vocabulary; null when
// they ask for none. Errors name the flag: an unreadable file, a schema that is not JSON
// or uses an unsupported keyword, a grammar that does not parse.
Expected<std::shared_ptr<const engine::GrammarConstraint>> load_grammar_constraint(
    const GrammarArgs& args, const tokenizer::Tokenizer& tokenizer);

}  // namespace pagoda::cli
