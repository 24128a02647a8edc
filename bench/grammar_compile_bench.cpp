// Time to get a JSON Schema ready for constrained decoding: the schema to GBNF text
// (json_schema_to_gbnf), the text to a grammar (parse_gbnf), and the grammar compiled
// against a vocabulary (compile_grammar), for a 50-property object schema (strings,
// bounded integers, numbers, booleans, enums, formats, patterns, arrays, nested objects)
// and a synthetic 49152-token byte-level vocabulary, and the default model's real one
// (model_vocab.h) where it is present.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/vocab_index.h"
#include "model_vocab.h"

namespace {

using Json = nlohmann::ordered_json;
using namespace pagoda::grammar;

// The same schema every run: property i takes the i % 10-th shape; every third one is
// optional. With bounded_strings two of the shapes carry a maxLength (each counted
// character is a level of a repetition), without it none does.
Json make_fifty_property_schema(bool bounded_strings) {
  Json properties = Json::object();
  Json required = Json::array();
  for (int i = 0; i < 50; ++i) {
    const std::string name = "field_" + std::to_string(i);
    Json property;
    switch (i % 10) {
      case 0: property = {{"type", "string"}, {"description", "free text"}}; break;
      case 1: property = {{"type", "integer"}, {"minimum", -40}, {"maximum", 1200}}; break;
      case 2: property = {{"type", "number"}}; break;
      case 3: property = {{"type", "boolean"}}; break;
      case 4: property = {{"enum", {"low", "medium", "high", "critical", "unknown"}}}; break;
      case 5: property = {{"type", "string"}, {"format", "date-time"}}; break;
      case 6:
        property = {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 8}};
        if (bounded_strings) property["items"]["maxLength"] = 32;
        break;
      case 7:
        property = {{"type", "object"},
                    {"properties", {{"id", {{"type", "integer"}, {"minimum", 0}}},
                                    {"label", {{"type", "string"}}},
                                    {"score", {{"type", "number"}, {"minimum", 0}, {"maximum", 1}}}}},
                    {"required", {"id", "label"}},
                    {"additionalProperties", false}};
        break;
      case 8: property = {{"type", "string"}, {"pattern", "^[A-Z]{2}-[0-9]{4}$"}}; break;
      default:
        property = {{"type", {"string", "null"}}, {"minLength", 1}};
        if (bounded_strings) property["maxLength"] = 64;
        break;
    }
    properties[name] = property;
    if (i % 3 != 2) required.push_back(name);
  }
  return Json{{"type", "object"}, {"properties", properties}, {"required", required},
              {"additionalProperties", false}};
}

const Json& fifty_property_schema(bool bounded_strings = true) {
  static const Json bounded = make_fifty_property_schema(true);
  static const Json unbounded = make_fifty_property_schema(false);
  return bounded_strings ? bounded : unbounded;
}

// 49152 distinct tokens, the same every run: the 256 single bytes (as byte-level BPE
// has), then words and word pieces with and without a leading space, numbers, runs of
// JSON punctuation and whitespace, and CJK characters.
std::shared_ptr<const VocabIndex> synthetic_vocab() {
  constexpr size_t kVocabSize = 49152;
  std::mt19937 rng(7);
  std::vector<std::string> tokens;
  std::unordered_set<std::string> seen;
  auto add = [&](std::string token) {
    if (!token.empty() && seen.insert(token).second) tokens.push_back(std::move(token));
  };
  for (int byte = 0; byte < 256; ++byte) add(std::string(1, static_cast<char>(byte)));
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  const std::string punctuation = "\"{}[]:,._-\\/ \n";
  const char* cjk[] = {"\xE7\x9A\x84", "\xE4\xB8\x80", "\xE6\x98\xAF", "\xE4\xBA\x86", "\xE6\x88\x91"};
  while (tokens.size() < kVocabSize) {
    std::string token;
    const uint32_t kind = rng() % 10;
    if (kind < 6) {  // a word piece, skewed to frequent letters
      if (rng() % 2) token += ' ';
      const size_t length = 2 + rng() % 8;
      for (size_t i = 0; i < length; ++i) token += letters[std::min<size_t>(rng() % 26, rng() % 26)];
      if (rng() % 8 == 0) token[token.size() > 1 && token[0] == ' ' ? 1 : 0] -= 32;  // Capitalized
    } else if (kind < 7) {  // a number
      token = std::to_string(rng() % 100000);
    } else if (kind < 9) {  // punctuation and whitespace, often around a word
      const size_t length = 1 + rng() % 4;
      for (size_t i = 0; i < length; ++i) token += punctuation[rng() % punctuation.size()];
      if (rng() % 2) token += letters.substr(rng() % 20, 1 + rng() % 5);
    } else {
      const size_t length = 1 + rng() % 3;
      for (size_t i = 0; i < length; ++i) token += cjk[rng() % std::size(cjk)];
    }
    add(std::move(token));
  }
  return VocabIndex::create(std::move(tokens), {0});
}

void BM_SchemaToGbnf(benchmark::State& state) {
  for (auto _ : state) {
    auto text = json_schema_to_gbnf(fifty_property_schema());
    if (!text.ok()) state.SkipWithError(text.status().message().c_str());
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_SchemaToGbnf)->Unit(benchmark::kMillisecond);

void BM_ParseGbnf(benchmark::State& state) {
  const std::string text = *json_schema_to_gbnf(fifty_property_schema());
  for (auto _ : state) {
    auto grammar = parse_gbnf(text);
    if (!grammar.ok()) state.SkipWithError(grammar.status().message().c_str());
    benchmark::DoNotOptimize(grammar);
  }
  state.counters["gbnf_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_ParseGbnf)->Unit(benchmark::kMillisecond);

void BM_CompileGrammar(benchmark::State& state) {
  const auto vocab = synthetic_vocab();
  const auto grammar = parse_gbnf(*json_schema_to_gbnf(fifty_property_schema()));
  if (!grammar.ok()) {
    state.SkipWithError(grammar.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto compiled = compile_grammar(*grammar, vocab);
    if (!compiled.ok()) state.SkipWithError(compiled.status().message().c_str());
    benchmark::DoNotOptimize(compiled);
  }
}
BENCHMARK(BM_CompileGrammar)->Unit(benchmark::kMillisecond);

// The three together: what a request with a new schema waits for, against `vocab`.
// Argument: 1 with the maxLength bounds, 0 without.
void schema_to_compiled_grammar(benchmark::State& state,
                                const std::shared_ptr<const VocabIndex>& vocab) {
  for (auto _ : state) {
    auto text = json_schema_to_gbnf(fifty_property_schema(state.range(0) != 0));
    auto grammar = parse_gbnf(*text);
    if (!grammar.ok()) {
      state.SkipWithError(grammar.status().message().c_str());
      break;
    }
    auto compiled = compile_grammar(*grammar, vocab);
    if (!compiled.ok()) {
      state.SkipWithError(compiled.status().message().c_str());
      break;
    }
    state.counters["rules"] = (*compiled)->grammar().n_rules();
    state.counters["positions"] = (*compiled)->stats().n_positions;
    state.counters["walks"] = (*compiled)->stats().n_walks;
    state.counters["uncertain"] = static_cast<double>((*compiled)->stats().n_uncertain);
  }
}

void BM_SchemaToCompiledGrammar(benchmark::State& state) {
  schema_to_compiled_grammar(state, synthetic_vocab());
}
BENCHMARK(BM_SchemaToCompiledGrammar)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// The same with the default model's vocabulary (SmolLM2's 49152 tokens).
void BM_SchemaToCompiledGrammarModelVocab(benchmark::State& state) {
  static const std::optional<ModelVocab> model = load_model_vocab();
  if (!model) {
    state.SkipWithError("no model file: models/SmolLM2-135M-Instruct.Q4_1.gguf (or PAGODA_GRAMMAR_BENCH_MODEL)");
    return;
  }
  schema_to_compiled_grammar(state, model->index);
}
BENCHMARK(BM_SchemaToCompiledGrammarModelVocab)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
