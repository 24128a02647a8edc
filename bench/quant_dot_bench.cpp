// Matrix-vector throughput of the dot kernels: every weight type on every instruction
// set this CPU has, one thread, reported as GB/s of weight bytes read (the figure that
// bounds token generation).
//
//   dram: 4096-wide rows, enough of them for 64 MiB of weights (past any L3), so every
//         byte comes from memory, as in a real forward pass.
//   l2:   the same rows, 512 KiB of them, read again and again from cache: the kernel's
//         own speed.
// Plus the activation quantizers, run once per vector before a product, and, for the
// batched matmuls, once per token of a batch: `quantize` alone against
// `quantize_described` (the same bytes plus each block's scales and, for Q8_0, quant
// sums, which the matmul needs), in ns per 32-value block.
//
// Run: build-*/bench/quant_dot_bench [--benchmark_filter=q4_K]. PAGODA_MAX_ISA caps the
// ISAs (see core/cpu_features.h).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot.h"

namespace pagoda::quant {
namespace {

constexpr int64_t kRowLength = 4096;
constexpr int64_t kDramBytes = int64_t{64} << 20;
constexpr int64_t kCacheBytes = int64_t{512} << 10;
constexpr int kDistinctRows = 64;  // random rows, tiled over the matrix

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,
                              DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL, DType::Q2_K,
                              DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,   DType::IQ4_XS};

// Byte offsets of the fp16 scale fields in a block: set to ordinary values (random bits
// would make NaNs, which some CPUs handle slowly), thousands of distinct ones as in a
// real model, so that their conversion costs what it really costs.
std::vector<size_t> scale_offsets(DType type) {
  switch (type) {
    case DType::Q4_0: return {offsetof(BlockQ4_0, d)};
    case DType::Q4_1: return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case DType::Q5_0: return {offsetof(BlockQ5_0, d)};
    case DType::Q5_1: return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case DType::Q8_0: return {offsetof(BlockQ8_0, d)};
    case DType::IQ4_NL: return {offsetof(BlockIQ4_NL, d)};
    case DType::Q2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case DType::Q3_K: return {offsetof(BlockQ3_K, d)};
    case DType::Q4_K: return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case DType::Q5_K: return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case DType::Q6_K: return {offsetof(BlockQ6_K, d)};
    case DType::IQ4_XS: return {offsetof(BlockIQ4_XS, d)};
    default: return {};
  }
}

// A weight matrix of `rows` rows: kDistinctRows random rows repeated.
std::vector<uint8_t> make_matrix(DType type, int64_t rows) {
  const size_t bytes_per_row = static_cast<size_t>(row_bytes(type, kRowLength));
  std::vector<uint8_t> distinct(bytes_per_row * kDistinctRows);
  std::mt19937 rng(static_cast<unsigned>(type));
  if (type == DType::F32 || type == DType::F16 || type == DType::BF16) {
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    const size_t count = distinct.size() / (type == DType::F32 ? 4 : 2);
    for (size_t i = 0; i < count; ++i) {
      const float v = unit(rng);
      if (type == DType::F32) {
        std::memcpy(distinct.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = type == DType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
        std::memcpy(distinct.data() + 2 * i, &h, 2);
      }
    }
  } else {
    for (uint8_t& b : distinct) b = static_cast<uint8_t>(rng());
    const size_t block = static_cast<size_t>(traits(type).type_size);
    std::uniform_real_distribution<float> magnitude(0.001f, 0.02f);
    for (size_t at = 0; at < distinct.size(); at += block) {
      for (size_t offset : scale_offsets(type)) {
        const uint16_t scale = f32_to_fp16(magnitude(rng));
        std::memcpy(distinct.data() + at + offset, &scale, 2);
      }
    }
  }
  std::vector<uint8_t> matrix(bytes_per_row * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(matrix.data() + r * bytes_per_row, distinct.data() + (r % kDistinctRows) * bytes_per_row,
                bytes_per_row);
  return matrix;
}

std::vector<float> make_activations() {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kRowLength);
  for (float& v : x) v = normal(rng);
  return x;
}

void matvec(benchmark::State& state, const DotKernel* kernel, int64_t target_bytes) {
  const int64_t bytes_per_row = row_bytes(kernel->weight, kRowLength);
  const int64_t rows = std::max<int64_t>(1, target_bytes / bytes_per_row);
  const std::vector<uint8_t> matrix = make_matrix(kernel->weight, rows);
  const std::vector<float> x = make_activations();
  std::vector<uint8_t> activations(static_cast<size_t>(row_bytes(kernel->activation, kRowLength)));
  kernel->quantize(x.data(), activations.data(), kRowLength);
  std::vector<float> out(static_cast<size_t>(rows));
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; ++r)
      out[r] = kernel->dot(kRowLength, matrix.data() + r * bytes_per_row, activations.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * bytes_per_row);
  state.counters["rows"] = static_cast<double>(rows);
}

void quantize_activations(benchmark::State& state, QuantizeActivationsFn quantize, DType format) {
  const std::vector<float> x = make_activations();
  std::vector<uint8_t> out(static_cast<size_t>(row_bytes(format, kRowLength)));
  for (auto _ : state) {
    quantize(x.data(), out.data(), kRowLength);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * kRowLength * static_cast<int64_t>(sizeof(float)));
}

// A batch of `tokens` activation rows of n values, quantized row by row as a batched
// matmul does: with `quantize`, or with `quantize_described` handing back the scales
// (and for Q8_0 the sums) the matmul derives from the blocks.
void quantize_batch(benchmark::State& state, const DotKernel* kernel, bool described, int64_t tokens, int64_t n) {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(tokens * n));
  for (float& v : x) v = normal(rng);
  const int64_t blocks = n / kQK;
  const size_t a_stride = static_cast<size_t>(row_bytes(kernel->activation, n));
  const int64_t scales_per_block = kernel->activation == DType::Q8_1 ? 2 : 1;
  std::vector<uint8_t> a(a_stride * static_cast<size_t>(tokens));
  std::vector<float> scales(static_cast<size_t>(tokens * blocks * scales_per_block));
  std::vector<int32_t> sums(static_cast<size_t>(tokens * blocks));
  const bool with_sums = kernel->activation == DType::Q8_0;
  for (auto _ : state) {
    for (int64_t t = 0; t < tokens; ++t) {
      const float* row = x.data() + t * n;
      uint8_t* out = a.data() + static_cast<size_t>(t) * a_stride;
      if (described) {
        kernel->quantize_described(row, out, n, scales.data() + t * blocks * scales_per_block,
                                   with_sums ? sums.data() + t * blocks : nullptr);
      } else {
        kernel->quantize(row, out, n);
      }
    }
    benchmark::DoNotOptimize(a.data());
    benchmark::DoNotOptimize(scales.data());
    benchmark::DoNotOptimize(sums.data());
    benchmark::ClobberMemory();
  }
  state.counters["time/block"] = benchmark::Counter(static_cast<double>(tokens * blocks),
                                                    benchmark::Counter::kIsIterationInvariantRate |
                                                        benchmark::Counter::kInvert);
}

void register_benchmarks() {
  for (DType type : kWeightTypes) {
    for (Isa isa : available_isas()) {
      const DotKernel* kernel = find_dot_kernel(type, isa);
      if (kernel == nullptr || kernel->isa != isa) continue;  // a fallback: measured under its own ISA
      const std::string name = std::string(dtype_name(type)) + "/" + std::string(isa_name(isa));
      benchmark::RegisterBenchmark(("dot/" + name + "/dram").c_str(), matvec, kernel, kDramBytes)
          ->Unit(benchmark::kMicrosecond)->MinTime(0.5);
      benchmark::RegisterBenchmark(("dot/" + name + "/l2").c_str(), matvec, kernel, kCacheBytes)
          ->Unit(benchmark::kMicrosecond)->MinTime(0.3);
    }
  }
  for (DType weight : {DType::Q4_0, DType::Q4_1, DType::Q4_K}) {
    const DotKernel* kernel = find_dot_kernel(weight, Isa::kScalar);
    benchmark::RegisterBenchmark(("quantize/" + std::string(dtype_name(kernel->activation))).c_str(),
                                 quantize_activations, kernel->quantize, kernel->activation)
        ->Unit(benchmark::kMicrosecond);
  }
  // Batched: AVX2's quantize; AVX2's quantize_described (that quantize, then a scalar pass
  // over the blocks: what the matmul pays without a form of its own); AVX-512's.
  struct Batch {
    int64_t tokens, n;
  };
  for (DType weight : {DType::Q8_0, DType::Q4_1}) {
    for (Batch batch : {Batch{512, 576}, Batch{16, 1536}}) {
      for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
        const DotKernel* kernel = find_dot_kernel(weight, isa);
        if (kernel == nullptr) continue;
        const std::string name = "quantize_batch/" + std::string(dtype_name(kernel->activation)) + "/" +
                                 std::to_string(batch.tokens) + "x" + std::to_string(batch.n) + "/" +
                                 std::string(isa_name(isa));
        for (bool described : {false, true}) {
          if (!described && isa != Isa::kAvx2) continue;  // AVX-512 kernels hand out AVX2's quantize
          benchmark::RegisterBenchmark((name + (described ? "/described" : "/quantize")).c_str(), quantize_batch,
                                       kernel, described, batch.tokens, batch.n)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::quant

int main(int argc, char** argv) {
  std::printf("CPU: %s\n", pagoda::cpu_features().description().c_str());
  pagoda::quant::register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
