// Time of the CPU backend's paged attention op (writing the step's K/V rows, then every
// query over its context) on the attention shape of SmolLM2-135M: 9 query heads, 3 KV
// heads, head_dim 64, one layer, 16-token blocks handed out in shuffled order.
//
//   decode:  16 sequences, one new token each, contexts spread over 256..1024
//   prefill: one sequence, a 512-token prompt with nothing cached
//   lone:    one sequence, one new token after 4095 cached (the split schedule)
//
// Each case runs with an f16 (the default), f32 and q8_0 cache. The cache has kLayers
// layers and each run attends the next one, as a model's step does: with one layer the
// whole cache (12 MiB in f16) would stay in L3 and the decode case would never wait on
// DRAM, where a real step's cache lives.
//
//   ./build/bench/attention_bench [--threads=N] [--reference] [--benchmark_filter=decode]
//
// --reference times the reference numerics mode (the schedules that mirror the reference
// build's rounding) instead of the default fast, batch-invariant one.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "quant/dot.h"

namespace {

using pagoda::DType;
using namespace pagoda::backend;

constexpr int32_t kHeads = 9, kKvHeads = 3, kHeadDim = 64, kBlockSize = 16;
constexpr int32_t kBlocks = 1024;  // 16384 token slots: room for every case
constexpr int32_t kLayers = 8;    // 8 x 12 MiB (f16) of K/V: more than any L3 here

int g_threads = 2;
bool g_reference = false;

Backend& backend() {
  static std::unique_ptr<Backend> b =
      make_cpu_backend({.n_threads = g_threads,
                        .numerics = g_reference ? CpuNumerics::kReference : CpuNumerics::kFast});
  return *b;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A KV cache of kLayers layers filled with random rows, and the batch of one step.
struct Step {
  std::unique_ptr<KvStorage> kv;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceAttention> sequences;
  std::vector<int64_t> slots;
  std::vector<float> qkv;  // [n_tokens][(kHeads + 2 * kKvHeads) * kHeadDim]
  std::vector<float> out;  // [n_tokens][kHeads * kHeadDim]
  int64_t n_tokens = 0;
  int64_t score_count = 0;  // (query, position) pairs per query head
  int32_t layer = 0;        // the layer the next run attends

  // contexts[i] positions in sequence i, the last new_tokens[i] of them new this step.
  bool build(DType type, const std::vector<int32_t>& contexts,
             const std::vector<int32_t>& new_tokens) {
    auto storage = backend().allocate_kv({.n_layers = kLayers,
                                          .n_kv_heads = kKvHeads,
                                          .head_dim = kHeadDim,
                                          .block_size = kBlockSize,
                                          .n_blocks = kBlocks,
                                          .type = type});
    if (!storage.ok()) return false;
    kv = std::move(*storage);
    fill_cache(type);
    std::vector<int32_t> free_blocks(kBlocks);
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), std::mt19937(3));
    tables.resize(contexts.size());
    for (size_t i = 0; i < contexts.size(); ++i) {
      for (int32_t b = 0; b * kBlockSize < contexts[i]; ++b) {
        tables[i].push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      const int32_t cached = contexts[i] - new_tokens[i];
      sequences.push_back({static_cast<int32_t>(n_tokens), new_tokens[i], contexts[i], tables[i]});
      for (int32_t p = cached; p < contexts[i]; ++p) {
        slots.push_back(int64_t{tables[i][static_cast<size_t>(p / kBlockSize)]} * kBlockSize +
                        p % kBlockSize);
        score_count += p + 1;
      }
      n_tokens += new_tokens[i];
    }
    qkv = random_values(static_cast<size_t>(n_tokens) * (kHeads + 2 * kKvHeads) * kHeadDim, 7);
    out.assign(static_cast<size_t>(n_tokens) * kHeads * kHeadDim, 0.0f);
    return true;
  }

  void fill_cache(DType type) {
    const pagoda::quant::DotKernel* convert = pagoda::quant::dot_kernel(type);
    const std::vector<float> row = random_values(kKvHeads * kHeadDim * 64, 11);  // 64 distinct rows
    for (int32_t l = 0; l < kLayers; ++l) {
      for (const TensorView& cache : {kv->keys(l), kv->values(l)}) {
        for (int64_t t = 0; t < cache.ne[1]; ++t) {
          convert->quantize(row.data() + (t % 64) * kKvHeads * kHeadDim, cache.row<std::byte>(t),
                            kKvHeads * kHeadDim);
        }
      }
    }
  }

  bool run() {
    const int64_t width = (kHeads + 2 * kKvHeads) * kHeadDim;
    const TensorView all = make_view(qkv.data(), DType::F32, width, n_tokens);
    const TensorView q = split_rows_into_heads(column_slice(all, 0, kHeads * kHeadDim), kHeadDim);
    const TensorView k =
        split_rows_into_heads(column_slice(all, kHeads * kHeadDim, kKvHeads * kHeadDim), kHeadDim);
    const TensorView v = split_rows_into_heads(
        column_slice(all, (kHeads + kKvHeads) * kHeadDim, kKvHeads * kHeadDim), kHeadDim);
    const AttentionBatch batch{sequences, slots, kBlockSize};
    backend().attention(q, k, v, *kv, layer, batch, 0.125f,
                        make_view(out.data(), DType::F32, kHeads * kHeadDim, n_tokens));
    layer = (layer + 1) % kLayers;
    return backend().take_error().ok();
  }
};

void bench_step(benchmark::State& state, DType type, std::vector<int32_t> contexts,
                std::vector<int32_t> new_tokens) {
  Step step;
  if (!step.build(type, contexts, new_tokens) || !step.run()) {
    state.SkipWithError("attention failed");
    return;
  }
  for (auto _ : state) {
    step.run();
    benchmark::DoNotOptimize(step.out.data());
  }
  // Per second of wall time: scores (query head x visible position) computed.
  state.counters["scores/s"] = benchmark::Counter(static_cast<double>(step.score_count) * kHeads,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<int32_t> decode_contexts() {
  std::vector<int32_t> contexts(16);
  for (int32_t i = 0; i < 16; ++i) contexts[static_cast<size_t>(i)] = 256 + i * (1024 - 256) / 15;
  return contexts;
}

void register_benchmarks() {
  for (const DType type : {DType::F16, DType::F32, DType::Q8_0}) {
    const std::string_view type_name = pagoda::dtype_name(type);
    benchmark::RegisterBenchmark(std::string("decode16/").append(type_name).c_str(), bench_step,
                                 type, decode_contexts(), std::vector<int32_t>(16, 1))
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(std::string("prefill512/").append(type_name).c_str(), bench_step,
                                 type, std::vector<int32_t>{512}, std::vector<int32_t>{512})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(std::string("lone4096/").append(type_name).c_str(), bench_step,
                                 type, std::vector<int32_t>{4096}, std::vector<int32_t>{1})
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) g_threads = std::atoi(argv[i] + 10);
    if (std::strcmp(argv[i], "--reference") == 0) g_reference = true;
  }
  benchmark::Initialize(&argc, argv);
  register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
