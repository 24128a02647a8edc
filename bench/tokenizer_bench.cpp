// Tokenization speed (MB/s of input text) on a large mixed text: English prose, code,
// numbers and non-Latin scripts, for SentencePiece and byte-level BPE vocabularies.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace {

using pagoda::tokenizer::DecodeOptions;
using pagoda::tokenizer::StreamingDetokenizer;
using pagoda::tokenizer::Tokenizer;

// About 1 MiB of text, the same every run.
const std::string& mixed_text() {
  static const std::string text = [] {
    const char* prose[] = {
        "The quick brown fox jumps over the lazy dog. ", "It was the best of times, it was the worst of times; ",
        "She said: \"I'll be there at 10:30, don't worry!\" ", "In 1492, Columbus sailed the ocean blue.\n",
        "Numbers like 3.14159, 2,718,281 and 1e-9 appear often. ", "We've seen it; they're sure it's fine.\n\n"};
    const char* code[] = {"def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
                          "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n",
                          "    if (x != nullptr && x->next) {\n        x = x->next;\n    }\n",
                          "SELECT name, COUNT(*) FROM users WHERE age >= 21 GROUP BY name;\n"};
    const char* unicode[] = {"Привет, как дела? ", "我想在苹果公司工作。 ", "こんにちは世界！ ", "Cửa Việt, Hà Nội. ",
                             "مرحبا بالعالم ", "🦙🚀✅ emoji 😶‍🌫️ ", "Äpfel und Öl für Größe. "};
    std::mt19937 rng(42);
    std::string out;
    while (out.size() < (1u << 20)) {
      switch (rng() % 4) {
        case 0: out += code[rng() % std::size(code)]; break;
        case 1: out += unicode[rng() % std::size(unicode)]; break;
        case 2: out += std::to_string(rng() % 1000000) + " "; break;
        default: out += prose[rng() % std::size(prose)]; break;
      }
    }
    return out;
  }();
  return text;
}

// The reference's vocabularies, committed with the tests (tests/data/README.md).
std::string vocab_path(const std::string& name) {
  return std::string(PAGODA_SOURCE_DIR) + "/tests/data/reference/tokenizer/ggml-vocab-" + name +
         ".gguf";
}

const Tokenizer* vocabulary(const std::string& name) {
  static std::map<std::string, Tokenizer> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return &it->second;
  auto reader = pagoda::gguf::Reader::open(vocab_path(name));
  if (!reader.ok()) return nullptr;
  auto tokenizer = Tokenizer::from_gguf(*reader);
  if (!tokenizer.ok()) return nullptr;
  return &loaded.emplace(name, std::move(tokenizer).value()).first->second;
}

void BM_Encode(benchmark::State& state, const std::string& name) {
  const Tokenizer* tokenizer = vocabulary(name);
  if (tokenizer == nullptr) {
    state.SkipWithError(("cannot load " + vocab_path(name)).c_str());
    return;
  }
  const std::string& text = mixed_text();
  size_t tokens = 0;
  for (auto _ : state) {
    const auto ids = tokenizer->encode(text, false, true);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_StreamDecode(benchmark::State& state, const std::string& name) {
  const Tokenizer* tokenizer = vocabulary(name);
  if (tokenizer == nullptr) {
    state.SkipWithError(("cannot load " + vocab_path(name)).c_str());
    return;
  }
  const auto ids = tokenizer->encode(mixed_text(), false, true);
  for (auto _ : state) {
    StreamingDetokenizer stream(*tokenizer);
    size_t bytes = 0;
    for (auto id : ids) bytes += stream.push(id).size();
    bytes += stream.finish().size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * mixed_text().size()));
}

BENCHMARK_CAPTURE(BM_Encode, spm_llama, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bpe_gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bpe_starcoder, std::string("starcoder"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bpe_falcon, std::string("falcon"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StreamDecode, spm_llama, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StreamDecode, bpe_gpt2, std::string("gpt-2"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
