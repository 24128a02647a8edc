#pragma once
// What the tests of the integer products (matmul_vec_int8.cu) share, on the GPU
// (matmul_int8_test.cpp) and in the host emulation of its kernel
// (matmul_int8_emulated_test.cpp): the formats, the CPU's scalar dot products every output
// must equal bit for bit, and activations with the edge cases of their quantization.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "quant/dot.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {

inline constexpr DType kIntegerFormats[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                                     DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};
inline constexpr int64_t kMaxBlocks = 384;  // matmul_vec_int8.cu: longer rows take the piece kernel

// y[t][j] = the scalar CPU dot of row j with x row t quantized as the CPU quantizes it.
inline std::vector<float> cpu_products(const HostWeights& w, const std::vector<float>& x, int64_t n_tokens) {
  const quant::DotKernel* kernel = quant::find_dot_kernel(w.type, Isa::kScalar);
  EXPECT_NE(kernel, nullptr);
  std::vector<float> y(static_cast<size_t>(n_tokens * w.n_out));
  std::vector<std::vector<std::byte>> activations(static_cast<size_t>(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) {
    activations[static_cast<size_t>(t)].resize(static_cast<size_t>(row_bytes(kernel->activation, w.n_in)));
    kernel->quantize(x.data() + t * w.n_in, activations[static_cast<size_t>(t)].data(), w.n_in);
  }
  parallel_for(w.n_out, [&](int64_t j) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      y[static_cast<size_t>(t * w.n_out + j)] =
          kernel->dot(w.n_in, w.bytes.data() + j * w.row_size(), activations[static_cast<size_t>(t)].data());
    }
  });
  return y;
}

// The first output whose bits differ ("" when none): got rows y_stride floats apart.
inline std::string first_difference(const std::vector<float>& got, int64_t y_stride, const std::vector<float>& want,
                             int64_t n_out, int64_t n_tokens) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < n_out; ++j) {
      const float g = got[static_cast<size_t>(t * y_stride + j)], w = want[static_cast<size_t>(t * n_out + j)];
      if (std::memcmp(&g, &w, sizeof(float)) != 0) {
        return "y[" + std::to_string(t) + "][" + std::to_string(j) + "] = " + std::to_string(g) + ", cpu " +
               std::to_string(w);
      }
    }
  }
  return "";
}

// x [n_tokens][n_in]: normal values, with edge rows: 1 all zeros; 2 every value +-1.5
// but a few smaller ones, so the first of equal magnitudes sets the scale; 3 values
// (i % 5) / 2 - 1, whose products with 127 / amax fall halfway between integers (round
// half to even, not away); 4 normal values times 1e-6 (subnormal f16 scales); 5 times
// 3e3.
inline std::vector<float> activations_with_edges(int64_t n_in, int64_t n_tokens, uint32_t seed) {
  std::vector<float> x = random_rows(n_in, n_tokens, seed);
  const auto row = [&](int64_t t) { return x.begin() + t * n_in; };
  if (n_tokens > 1) std::fill(row(1), row(2), 0.0f);
  for (int64_t i = 0; i < n_in; ++i) {
    const auto at = [&](int64_t t) -> float& { return x[static_cast<size_t>(t * n_in + i)]; };
    if (n_tokens > 2) at(2) = i % 7 == 3 ? 0.25f : (i % 2 ? 1.5f : -1.5f);
    if (n_tokens > 3) at(3) = static_cast<float>(i % 5) * 0.5f - 1.0f;
    if (n_tokens > 4) at(4) *= 1e-6f;
    if (n_tokens > 5) at(5) *= 3e3f;
  }
  return x;
}

}  // namespace pagoda::backend::cuda_testing
