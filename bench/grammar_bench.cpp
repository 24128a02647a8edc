// Grammar-constrained decoding: the cost of one step's token bitmask
// (GrammarMatcher::fill_next_token_bitmask) along a JSON document, on a real
// 49152-token vocabulary (SmolLM2's, when PAGODA_GRAMMAR_BENCH_MODEL or
// <source>/models/SmolLM2-135M-Instruct.Q4_1.gguf names it) or else a synthetic one of
// the same size. Also the grammar's compile time and the accept-only cost per step.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"
#include "model_vocab.h"

namespace {

using namespace pagoda::grammar;

// JSON, with a string's characters inside one rule (see grammar.h).
const char* kJson = R"G(
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
)G";

// The same language written with one rule per character: more tokens are left to the
// run-time check.
const char* kJsonCharRule = R"G(
root   ::= ws value ws
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array  ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1F] | "\\" escape
escape ::= ["\\/bfnrt] | "u" hex hex hex hex
hex    ::= [0-9a-fA-F]
number ::= int frac? exp?
int    ::= "-"? ( "0" | [1-9] digit* )
digit  ::= [0-9]
frac   ::= "." digit+
exp    ::= [eE] [-+]? digit+
ws     ::= ( " " | "\t" | "\n" )*
)G";

std::string document() {
  std::string doc = "{\n  \"name\": \"Pagoda grammar benchmark\",\n  \"version\": 3,\n  \"items\": [\n";
  std::mt19937 rng(7);
  const char* words[] = {"alpha", "beta", "gamma", "delta", "naïve café", "東京", "quote \\\"x\\\"", "tab\\t", "😀 emoji"};
  for (int i = 0; i < 24; ++i) {
    doc += "    {\"id\": " + std::to_string(i * 37 + 5) + ", \"label\": \"" + words[rng() % 9] + " " + words[rng() % 9] +
           "\", \"score\": " + std::to_string(rng() % 1000) + "." + std::to_string(rng() % 100) +
           "e-2, \"tags\": [\"" + words[rng() % 9] + "\", \"" + words[rng() % 9] + "\"], \"ok\": " +
           (rng() % 2 ? "true" : "false") + ", \"next\": null}";
    doc += i + 1 < 24 ? ",\n" : "\n";
  }
  doc += "  ],\n  \"nested\": {\"a\": {\"b\": {\"c\": [1, [2, [3, {}]]]}}}\n}";
  return doc;
}

struct BenchVocab {
  std::shared_ptr<const VocabIndex> index;
  std::vector<int32_t> doc_tokens;
  bool real = false;
};

// Synthetic: 49152 tokens shaped like a BPE vocabulary's (words with and without a
// leading space or quote, punctuation runs, digits, multi-byte characters).
BenchVocab synthetic_vocab(const std::string& doc) {
  std::mt19937 rng(11);
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int32_t> ids;
  auto add = [&](const std::string& t) {
    if (ids.emplace(t, static_cast<int32_t>(tokens.size())).second) tokens.push_back(t);
  };
  tokens.emplace_back();  // 0: end of text (stop)
  tokens.emplace_back();  // 1: a control token
  for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)));
  const char* punct[] = {"\"", ":", ",", "{", "}", "[", "]", " ", "\n", ".", "-", "\\", "'", "(", ")"};
  for (const char* a : punct)
    for (const char* b : punct) add(std::string(a) + b);
  for (const char* a : punct)
    for (const char* b : punct)
      for (const char* c : punct) add(std::string(a) + b + c);
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqz";
  while (tokens.size() < 49152) {
    std::string w;
    const int kind = static_cast<int>(rng() % 10);
    if (kind == 0) {
      w = std::to_string(rng() % 1000);
    } else if (kind == 1) {
      const char* mb[] = {"é", "ï", "東", "京", "😀", "ß", "α"};
      w = mb[rng() % 7];
      if (rng() % 2) w += letters[rng() % 8];
    } else {
      const int len = 2 + static_cast<int>(rng() % 8);
      for (int i = 0; i < len; ++i) w += letters[std::min<size_t>(rng() % 26, rng() % 26)];
      if (kind < 6) w = " " + w;
      if (kind == 6) w = "\"" + w;
      // A word running into JSON punctuation leaves the string it is in: such tokens
      // are checked at run time inside every string. Real BPE vocabularies have a few
      // hundred; more of them make each step inside a string slower.
      if (kind == 7 && rng() % 32 == 0) w += "\":";
    }
    add(w);
  }
  // Greedy longest-match tokenization of the document.
  BenchVocab v;
  for (size_t i = 0; i < doc.size();) {
    for (size_t len = std::min<size_t>(16, doc.size() - i); len > 0; --len) {
      auto it = ids.find(doc.substr(i, len));
      if (it != ids.end()) {
        v.doc_tokens.push_back(it->second);
        i += len;
        break;
      }
    }
  }
  v.index = VocabIndex::create(std::move(tokens), {0});
  return v;
}

const BenchVocab& bench_vocab() {
  static const BenchVocab vocab = [] {
    const std::string doc = document();
    if (std::optional<ModelVocab> model = load_model_vocab()) {
      BenchVocab v;
      v.index = model->index;
      v.doc_tokens = model->tokenizer->encode(doc, false, false);
      v.real = true;
      return v;
    }
    return synthetic_vocab(doc);
  }();
  return vocab;
}

std::shared_ptr<const CompiledGrammar> compiled(const char* gbnf) {
  auto g = parse_gbnf(gbnf);
  if (!g.ok()) return nullptr;
  auto c = compile_grammar(*g, bench_vocab().index);
  return c.ok() ? *c : nullptr;
}

void BM_Compile(benchmark::State& state, const char* gbnf) {
  const BenchVocab& v = bench_vocab();
  auto g = parse_gbnf(gbnf);
  if (!g.ok()) {
    state.SkipWithError(g.status().message().c_str());
    return;
  }
  std::shared_ptr<const CompiledGrammar> c;
  for (auto _ : state) {
    auto r = compile_grammar(*g, v.index);
    c = *r;
    benchmark::DoNotOptimize(c);
  }
  state.SetLabel(v.real ? "SmolLM2 vocabulary" : "synthetic vocabulary");
  state.counters["positions"] = c->stats().n_positions;
  state.counters["uncertain_avg"] = static_cast<double>(c->stats().n_uncertain) / std::max(1, c->stats().n_positions);
  state.counters["uncertain_max"] = c->stats().max_uncertain;
  state.counters["stack_growth"] = c->stats().max_stack_growth;
}

// One iteration: the whole document, a mask and an accepted token per step.
void BM_MaskPerStep(benchmark::State& state, const char* gbnf) {
  const BenchVocab& v = bench_vocab();
  auto g = compiled(gbnf);
  if (!g) {
    state.SkipWithError("grammar did not compile");
    return;
  }
  std::vector<uint32_t> mask(bitmask_words(v.index->n_vocab()));
  double slowest = 0;  // seconds, the slowest single mask
  for (auto _ : state) {
    GrammarMatcher m(g);
    for (int32_t tok : v.doc_tokens) {
      const auto t0 = std::chrono::steady_clock::now();
      m.fill_next_token_bitmask(mask);
      benchmark::DoNotOptimize(mask.data());
      slowest = std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!m.accept_token(tok)) {
        state.SkipWithError("the document's token was rejected");
        return;
      }
    }
  }
  state.SetLabel(v.real ? "SmolLM2 vocabulary" : "synthetic vocabulary");
  state.counters["steps"] = static_cast<double>(v.doc_tokens.size());
  state.counters["slowest_us"] = slowest * 1e6;
  state.counters["per_step"] = benchmark::Counter(static_cast<double>(v.doc_tokens.size()),
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

// The same walk without the masks: what accepting the tokens costs.
void BM_AcceptPerStep(benchmark::State& state, const char* gbnf) {
  const BenchVocab& v = bench_vocab();
  auto g = compiled(gbnf);
  if (!g) {
    state.SkipWithError("grammar did not compile");
    return;
  }
  for (auto _ : state) {
    GrammarMatcher m(g);
    for (int32_t tok : v.doc_tokens) {
      if (!m.accept_token(tok)) {
        state.SkipWithError("the document's token was rejected");
        return;
      }
    }
    benchmark::DoNotOptimize(m);
  }
  state.counters["per_step"] = benchmark::Counter(static_cast<double>(v.doc_tokens.size()),
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

BENCHMARK_CAPTURE(BM_Compile, json, kJson)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, json_char_rule, kJsonCharRule)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskPerStep, json, kJson)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskPerStep, json_char_rule, kJsonCharRule)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_AcceptPerStep, json, kJson)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
