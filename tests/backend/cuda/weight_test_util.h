#pragma once
// Weights of every type the CUDA backend reads, made on the host by the project's
// quantizer from random rows, for the get_rows and matmul tests; and a parallel loop, as
// quantizing a 1B model's matrices (IQ4 above all) takes seconds on one core.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/tensor.h"
#include "core/dtype.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace pagoda::backend::cuda_testing {

inline constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,
                                         DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K,   DType::Q3_K,
                                         DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

inline bool is_plain_type(DType type) { return type == DType::F32 || type == DType::F16 || type == DType::BF16; }

// The formats the few-token path multiplies in integers against 8-bit activations
// (matmul_vec_int8.cu), as the CPU does.
inline bool multiplied_in_integers(DType type) {
  switch (type) {
    case DType::Q8_0: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::IQ4_NL:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::IQ4_XS:
      return true;
    default:
      return false;
  }
}

// fn(i) for every i in [0, n), in contiguous ranges over the host's cores.
inline void parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
  const int64_t n_threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 32);
  const int64_t per_thread = (n + n_threads - 1) / n_threads;
  std::vector<std::thread> threads;
  for (int64_t begin = 0; begin < n; begin += per_thread) {
    threads.emplace_back([&fn, begin, end = std::min(n, begin + per_thread)] {
      for (int64_t i = begin; i < end; ++i) fn(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Normal(0, scale) values, row r drawn from its own seed so that rows fill in parallel.
inline std::vector<float> random_rows(int64_t cols, int64_t rows, uint32_t seed, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(cols * rows));
  parallel_for(rows, [&](int64_t r) {
    std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(r));
    std::normal_distribution<float> dist(0.0f, scale);
    for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * cols + c)] = dist(rng);
  });
  return v;
}

// A [n_out][n_in] weight matrix of `type` in host memory, quantized row by row.
struct HostWeights {
  DType type = DType::F32;
  int64_t n_in = 0, n_out = 0;
  std::vector<uint8_t> bytes;  // n_out rows of row_bytes(type, n_in)

  size_t row_size() const { return static_cast<size_t>(row_bytes(type, n_in)); }
  const uint8_t* row(int64_t r) const { return bytes.data() + static_cast<size_t>(r) * row_size(); }
  // A view of the rows (for reading: a backend uploads or multiplies them).
  TensorView view() const { return make_view(const_cast<uint8_t*>(bytes.data()), type, n_in, n_out); }
  // Row r as quant::dequantize_row gives it: the exact values every kernel must use.
  std::vector<float> dequantized_row(int64_t r) const {
    std::vector<float> v(static_cast<size_t>(n_in));
    EXPECT_TRUE(quant::dequantize_row(type, row(r), v.data(), n_in).ok());
    return v;
  }
};

// Rows of normal(0, 0.5) values (about the spread of a small model's weights) quantized to
// `type` (F32 / F16 / BF16: converted).
inline HostWeights make_weights(DType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  HostWeights w{type, n_in, n_out, {}};
  w.bytes.resize(w.row_size() * static_cast<size_t>(n_out));
  const std::vector<float> values = random_rows(n_in, n_out, seed, 0.5f);
  parallel_for(n_out, [&](int64_t r) {
    const Status s = quant::quantize_row(type, values.data() + r * n_in, w.bytes.data() + r * w.row_size(), n_in);
    EXPECT_TRUE(s.ok()) << s.message();
  });
  return w;
}

// row . x in f64, and the scale S = sqrt(sum of the squared terms) that bounds the
// rounding of any summation of them (the matmul tests' tolerances are multiples of S).
struct ExactDot {
  double value, scale;
};
inline ExactDot exact_dot(const std::vector<float>& row, const float* x) {
  double sum = 0.0, sum_sq = 0.0;
  for (size_t i = 0; i < row.size(); ++i) {
    const double term = static_cast<double>(row[i]) * static_cast<double>(x[i]);
    sum += term;
    sum_sq += term * term;
  }
  return {sum, std::sqrt(sum_sq)};
}

// Test names: the type as GGUF names it ("q4_K").
inline std::string type_test_name(const ::testing::TestParamInfo<DType>& info) {
  return std::string(dtype_name(info.param));
}

}  // namespace pagoda::backend::cuda_testing
