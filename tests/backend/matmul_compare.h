#pragma once
// Helpers of the tests that compare one matmul kernel family against another bit for bit
// (matmul_vnni_test.cpp, matmul_amx_test.cpp).

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "quant/dot.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {

// Tests of one weight type each (the parameter) that need `kIsa`: they skip where the CPU
// lacks it (or PAGODA_MAX_ISA caps it).
template <Isa kIsa>
class IsaKernelTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!quant::isa_available(kIsa)) GTEST_SKIP() << "this CPU lacks " << isa_name(kIsa) << " (or PAGODA_MAX_ISA caps it)";
  }
};

// n_out rows of n_in values quantized to `type`, row after row.
inline std::vector<std::byte> quantized_rows(DType type, const std::vector<float>& values, int64_t n_out, int64_t n_in) {
  const size_t row = size_t(row_bytes(type, n_in));
  std::vector<std::byte> bytes(row * size_t(n_out));
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, &values[size_t(r * n_in)], bytes.data() + size_t(r) * row, n_in).ok());
  }
  return bytes;
}

// y = x W^T with the fast kernels of `isa` on `threads` threads.
inline backend::testing::Matrix run_matmul(Isa isa, int threads, const TensorView& w, backend::testing::Matrix& x, int64_t n_out) {
  ThreadPool pool(threads);
  Matmul matmul(isa, CpuNumerics::kFast);
  backend::testing::Matrix y(x.rows, n_out, 2);
  EXPECT_TRUE(matmul.run(pool, w, x.view(), y.view()).ok());
  return y;
}

inline void expect_same_bits(const backend::testing::Matrix& a, const backend::testing::Matrix& b, const std::string& what) {
  for (int64_t t = 0; t < a.rows; ++t) {
    ASSERT_EQ(std::memcmp(a.data.data() + t * a.stride, b.data.data() + t * b.stride, size_t(a.cols) * sizeof(float)), 0)
        << what << ": token " << t << " of " << a.rows;
  }
}

// Activations at full scale: tokens of one sign (t % 3 == 0 positive, 1 negative) or
// alternating (2).
inline backend::testing::Matrix extreme_activations(int64_t n_tokens, int64_t n_in) {
  backend::testing::Matrix x(n_tokens, n_in, 0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < n_in; ++i) x.at(t, i) = t % 3 == 0 ? 3.0f : t % 3 == 1 ? -3.0f : (i % 2 ? 3.0f : -3.0f);
  }
  return x;
}

// `tested` gives the bits `reference` gives for `type`: random weights of each of n_ins
// inputs in 301 rows (a partial 16-row strip and several panels) and in 40 (less than
// three strips), against each of token_counts tokens, on 1 and 2 threads.
inline void expect_same_bits_as(Isa tested, Isa reference, DType type, const std::vector<int64_t>& n_ins,
                                const std::vector<int64_t>& token_counts) {
  for (const int64_t n_in : n_ins) {
    for (const int64_t n_out : {int64_t{301}, int64_t{40}}) {
      std::vector<std::byte> bytes =
          quantized_rows(type, backend::testing::random_values(size_t(n_in * n_out), 11, 0.5f), n_out, n_in);
      const TensorView w = make_view(bytes.data(), type, n_in, n_out);
      for (const int64_t n_tokens : token_counts) {
        backend::testing::Matrix x(n_tokens, n_in, 3, 12 + uint32_t(n_tokens), 2.0f);
        for (const int threads : {1, 2}) {
          const std::string what = std::string(dtype_name(type)) + ", " + std::to_string(n_in) + " inputs, " +
                                   std::to_string(n_out) + " rows, " + std::to_string(n_tokens) + " tokens, " +
                                   std::to_string(threads) + " threads";
          expect_same_bits(run_matmul(tested, threads, w, x, n_out), run_matmul(reference, threads, w, x, n_out), what);
        }
      }
    }
  }
}

}  // namespace pagoda::backend::cpu
