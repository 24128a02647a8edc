// Feeds arbitrary bytes to the grammar front ends a client reaches through the API:
// the first byte picks GBNF (guided_grammar, grammar), a JSON Schema (response_format,
// guided_json, tool parameters) or a regular expression (guided_regex, pattern); the
// rest is the text. Nothing may crash, hang, leak or throw: a bad input is an error
// Status with a message. What converts must parse as GBNF, and what parses must compile
// (or fail with a message) and run a matcher over the input's own bytes within bounds.

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex_to_gbnf.h"

namespace {

namespace grammar = pagoda::grammar;

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "grammar_fuzz: %s\n", message.c_str());
  std::abort();
}

// A small byte-level vocabulary: single bytes and a few multi-byte pieces, so that
// compiling and masking run on real token sets.
std::shared_ptr<const grammar::VocabIndex> fuzz_vocab() {
  static const std::shared_ptr<const grammar::VocabIndex> vocab = [] {
    std::vector<std::string> tokens;
    for (int byte = 1; byte < 128; ++byte) tokens.emplace_back(1, static_cast<char>(byte));
    for (const char* piece : {"\"", "{\"", "\":", "true", "false", "null", "  ", "\n", "ab", "\xc3\xa9"}) {
      tokens.emplace_back(piece);
    }
    tokens.emplace_back();  // a control token: no bytes
    const int32_t stop = static_cast<int32_t>(tokens.size());  // one past them: the stop token
    tokens.emplace_back("</s>");
    return grammar::VocabIndex::create(std::move(tokens), {stop});
  }();
  return vocab;
}

void exercise(const std::string& gbnf, std::string_view input) {
  pagoda::Expected<grammar::Grammar> parsed = grammar::parse_gbnf(gbnf);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) fail("a parse error without a message");
    return;
  }
  // What parses prints back to text that parses again.
  if (!grammar::parse_gbnf(grammar::to_gbnf(*parsed)).ok()) fail("to_gbnf output does not parse");
  auto compiled = grammar::compile_grammar(*parsed, fuzz_vocab());
  if (!compiled.ok()) {
    if (compiled.status().message().empty()) fail("a compile error without a message");
    return;
  }
  grammar::GrammarMatcher matcher(*compiled);
  std::vector<uint32_t> mask(grammar::bitmask_words((*compiled)->vocab().n_vocab()));
  for (size_t i = 0; i < input.size() && i < 64; ++i) {
    matcher.fill_next_token_bitmask(mask);
    if (!matcher.accept_bytes(input.substr(i, 1))) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      exercise(std::string(text), text);
      break;
    case 1: {
      const nlohmann::ordered_json schema =
          nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) return 0;
      pagoda::Expected<std::string> gbnf = grammar::json_schema_to_gbnf(schema);
      if (!gbnf.ok()) {
        if (gbnf.status().message().empty()) fail("a schema error without a message");
        return 0;
      }
      if (!grammar::parse_gbnf(*gbnf).ok()) fail("a converted schema does not parse: " + *gbnf);
      exercise(*gbnf, text);
      break;
    }
    default: {
      pagoda::Expected<std::string> gbnf = grammar::regex_to_gbnf(text);
      if (!gbnf.ok()) {
        if (gbnf.status().message().empty()) fail("a regex error without a message");
        return 0;
      }
      if (!grammar::parse_gbnf(*gbnf).ok()) fail("a converted regex does not parse: " + *gbnf);
      exercise(*gbnf, text);
      break;
    }
  }
  return 0;
}
