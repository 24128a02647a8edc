// Throughput of the CPU backend's matmul (y = x W^T) on the shapes of real models: for
// each weight type, shape and batch size, GFLOP/s (2 * n_in * n_out * tokens) and GB/s
// of weight bytes streamed. One token is decoding (memory-bound), 512 is a prompt
// chunk (compute-bound).
//
// Rates are per second of process CPU time (all threads), so they stay meaningful on a
// shared, busy machine: divide by the thread count for per-core figures, or compare the
// wall time column on a quiet one.
//
//   ./build/bench/matmul_bench [--benchmark_filter=q4_K] [--threads=N] [--reference] [--kept]
//
// --kept gives the weights to Backend::upload_weight first, as the model loader does, so
// that batched matmuls multiply the copies the backend keeps repacked (matmul_repacked.h)
// instead of repacking per call.
//
// --reference times the kernels of CpuNumerics::kReference (each type with the reference
// build's f32 rounding, see backend/cpu/matmul/matmul.h) instead of the default kFast ones.
//
// On a CPU with AMX, the k-quants' tiles of 2 to 63 tokens run the tile unit's kernel or
// the VNNI strips, whichever the matmul measures faster (matmul.h): their figures are
// those of the one it settles on. PAGODA_MAX_ISA=avx512vnni times the strips alone.

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "quant/quantize.h"

namespace {

using pagoda::DType;
using namespace pagoda::backend;

struct Shape {
  const char* model;
  int64_t n_out, n_in;
};

constexpr Shape kShapes[] = {
    {"smollm2-135m.attn", 576, 576},   {"smollm2-135m.ffn_up", 1536, 576},
    {"smollm2-135m.ffn_down", 576, 1536}, {"smollm2-135m.output", 49152, 576},
    {"1b.attn", 2048, 2048},           {"1b.ffn_up", 8192, 2048},
    {"1b.ffn_down", 2048, 8192},       {"1b.output", 49152, 2048},
    {"8b.ffn_down", 4096, 14336},
};
constexpr DType kTypes[] = {DType::Q4_K, DType::Q8_0, DType::Q4_1, DType::Q6_K, DType::Q4_0, DType::IQ4_XS, DType::F16, DType::BF16, DType::Q5_0, DType::Q5_1};
constexpr int64_t kTokens[] = {1, 2, 4, 8, 16, 32, 64, 128, 512};  // decoding, verifying proposals, batches of decodes, prompts

int g_threads = 0;
CpuNumerics g_numerics = CpuNumerics::kFast;
bool g_kept = false;

Backend& backend() {
  static std::unique_ptr<Backend> b =
      make_cpu_backend({.n_threads = g_threads, .numerics = g_numerics});
  return *b;
}

// Quantized random weights, made once per (type, shape): quantizing is slower than the matmul.
const std::vector<std::byte>& weights(DType type, const Shape& shape) {
  static std::map<std::string, std::vector<std::byte>> cache;
  const std::string key = std::string(pagoda::dtype_name(type)) + shape.model;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(shape.n_in));
  const size_t row_size = static_cast<size_t>(pagoda::row_bytes(type, shape.n_in));
  std::vector<std::byte> bytes(row_size * static_cast<size_t>(shape.n_out));
  for (int64_t r = 0; r < shape.n_out; ++r) {
    if (r < 64) {  // 64 distinct random rows, repeated: the kernels cannot tell
      for (float& v : row) v = dist(rng);
      if (!pagoda::quant::quantize_row(type, row.data(), bytes.data() + r * row_size, shape.n_in).ok()) {
        std::abort();  // the shapes registered in main() are all valid for their type
      }
    } else {
      std::memcpy(bytes.data() + r * row_size, bytes.data() + (r % 64) * row_size, row_size);
    }
  }
  return cache.emplace(key, std::move(bytes)).first->second;
}

void bench_matmul(benchmark::State& state, DType type, Shape shape, int64_t tokens) {
  const std::vector<std::byte>& w = weights(type, shape);
  std::vector<float> x(static_cast<size_t>(shape.n_in * tokens)), y(static_cast<size_t>(shape.n_out * tokens));
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  TensorView wv = make_view(const_cast<std::byte*>(w.data()), type, shape.n_in, shape.n_out);
  const TensorView xv = make_view(x.data(), DType::F32, shape.n_in, tokens);
  const TensorView yv = make_view(y.data(), DType::F32, shape.n_out, tokens);
  Backend& b = backend();
  if (g_kept) {
    auto uploaded = b.upload_weight(wv);
    if (!uploaded) {
      state.SkipWithError("upload_weight failed");
      return;
    }
    wv = *uploaded;
    b.matmul(wv, xv, yv);  // the first multi-token call makes the kept copy: not timed
  }
  for (auto _ : state) {
    b.matmul(wv, xv, yv);
    benchmark::DoNotOptimize(y.data());
  }
  if (!b.take_error().ok()) state.SkipWithError("matmul failed");
  const double flops = 2.0 * static_cast<double>(shape.n_in) * shape.n_out * tokens;
  state.counters["GFLOP/cpu-s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/cpu-s"] = benchmark::Counter(static_cast<double>(w.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(b.name());
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) g_threads = std::atoi(argv[i] + 10);
    if (std::strcmp(argv[i], "--reference") == 0) g_numerics = CpuNumerics::kReference;
    if (std::strcmp(argv[i], "--kept") == 0) g_kept = true;
  }
  for (const DType type : kTypes) {
    for (const Shape& shape : kShapes) {
      // SmolLM2's 576-wide rows are no multiple of 256: k-quant files store them otherwise.
      if (shape.n_in % pagoda::traits(type).block_size != 0) continue;
      for (const int64_t tokens : kTokens) {
        const std::string name = std::string(pagoda::dtype_name(type)) + "/" + shape.model + "/" +
                                 std::to_string(shape.n_out) + "x" + std::to_string(shape.n_in) + "/tokens:" +
                                 std::to_string(tokens);
        benchmark::RegisterBenchmark(name.c_str(), bench_matmul, type, shape, tokens)
            ->Unit(benchmark::kMillisecond)
            ->MeasureProcessCPUTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
