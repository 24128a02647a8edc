#include "cli/grammar_args.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/grammar_vocab.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

namespace pagoda::cli {
namespace {

Expected<std::string> read_file(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(flag + ": cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error(flag + ": cannot read " + path);
  return text.str();
}

Expected<std::string> schema_gbnf(const std::string& text, const std::string& flag) {
  const nlohmann::ordered_json schema =
      nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return invalid_argument(flag + ": not valid JSON");
  Expected<std::string> gbnf = grammar::json_schema_to_gbnf(schema);
  if (!gbnf.ok()) return invalid_argument(flag + ": " + gbnf.status().message());
  return gbnf;
}

Expected<std::string> requested_gbnf(const GrammarArgs& args) {
  if (!args.grammar_file.empty()) return read_file(args.grammar_file, "--grammar-file");
  if (!args.json_schema.empty()) return schema_gbnf(args.json_schema, "--json-schema");
  PAGODA_ASSIGN_OR_RETURN(const std::string text,
                          read_file(args.json_schema_file, "--json-schema-file"));
  return schema_gbnf(text, "--json-schema-file");
}

}  // namespace

void add_grammar_options(CLI::App& command, GrammarArgs& args) {
  CLI::Option* file = command.add_option("--grammar-file", args.grammar_file,
                                         "Constrain the output to a GBNF grammar (root rule: root)");
  CLI::Option* schema =
      command.add_option("--json-schema", args.json_schema,
                         "Constrain the output to JSON matching this JSON Schema")
          ->excludes(file);
  command.add_option("--json-schema-file", args.json_schema_file,
                     "Constrain the output to JSON matching the JSON Schema in this file")
      ->excludes(file)
      ->excludes(schema);
}

Expected<std::shared_ptr<const engine::GrammarConstraint>> load_grammar_constraint(
    const GrammarArgs& args, const tokenizer::Tokenizer& tokenizer) {
  if (args.empty()) return std::shared_ptr<const engine::GrammarConstraint>();
  PAGODA_ASSIGN_OR_RETURN(const std::string gbnf, requested_gbnf(args));
  Expected<grammar::Grammar> parsed = grammar::parse_gbnf(gbnf);
  if (!parsed.ok()) return invalid_argument("grammar: " + parsed.status().message());
  PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::CompiledGrammar> compiled,
                          grammar::compile_grammar(*parsed, engine::make_vocab_index(tokenizer)));
  return std::shared_ptr<const engine::GrammarConstraint>(
      std::make_shared<engine::GrammarConstraint>(engine::GrammarConstraint{std::move(compiled), {}}));
}

}  // namespace pagoda::cli
