// CpuNumerics::kFast is batch-invariant and thread-count-invariant, bit for bit: for every
// weight type, the outputs of a token do not depend on which other tokens share its
// matmul, on where it falls in the kernels' tiles (single-token path, groups of 4,
// leftovers, several token tiles), nor on how many threads split the work. Continuous
// batching relies on it: a request must decode the same tokens alone or among others.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,  DType::Q4_0,
                                  DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K,  DType::Q3_K,
                                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

// 301 rows: not a multiple of 8 (a partial strip), and more than one weight panel.
constexpr int64_t kOutputs = 301;
constexpr int64_t kInputs = 512;
// More tokens than one token tile holds, and not a multiple of 4.
constexpr int64_t kTokens = 150;

std::vector<std::byte> quantized_weights(DType type, uint32_t seed) {
  const size_t row = size_t(row_bytes(type, kInputs));
  std::vector<std::byte> bytes(row * kOutputs);
  const std::vector<float> values = random_values(size_t(kInputs * kOutputs), seed, 0.5f);
  for (int64_t r = 0; r < kOutputs; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, &values[size_t(r * kInputs)], bytes.data() + r * row, kInputs).ok());
  }
  return bytes;
}

// Activations whose magnitude changes from token to token (as hidden states do), so that
// the 8-bit activation scales differ between the tokens of a batch.
Matrix activations(uint32_t seed) {
  Matrix x(kTokens, kInputs, 3, seed, 1.0f);
  for (int64_t t = 0; t < kTokens; ++t) {
    const float scale = 0.05f + float(t % 13);
    for (int64_t i = 0; i < kInputs; ++i) x.at(t, i) *= scale;
  }
  return x;
}

const float* row(const Matrix& m, int64_t r) { return m.data.data() + r * m.stride; }

// y for tokens [begin, begin + n) of x, from a matmul over those tokens alone.
Matrix run_slice(Matmul& matmul, ThreadPool& pool, const TensorView& w, const Matrix& x, int64_t begin, int64_t n) {
  Matrix slice(n, kInputs, 5), y(n, kOutputs, 7);
  for (int64_t t = 0; t < n; ++t) std::memcpy(&slice.at(t, 0), row(x, begin + t), kInputs * sizeof(float));
  EXPECT_TRUE(matmul.run(pool, w, slice.view(), y.view()).ok());
  return y;
}

class MatmulInvarianceTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulInvarianceTest, TokenResultsDependOnlyOnTheTokenAndTheWeights) {
  const DType type = GetParam();
  std::vector<std::byte> bytes = quantized_weights(type, 31);
  const TensorView w = make_view(bytes.data(), type, kInputs, kOutputs);
  const Matrix x = activations(32);

  ThreadPool batch_pool(2);
  Matmul batch_matmul(quant::best_isa(), CpuNumerics::kFast);
  const Matrix whole = run_slice(batch_matmul, batch_pool, w, x, 0, kTokens);

  for (const int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    Matmul matmul(quant::best_isa(), CpuNumerics::kFast);  // its own scratch, as a second engine would have
    for (const int64_t batch : {1, 2, 3, 4, 7, 64}) {  // 2 and 3 are planned as 4
      // Start the slices at an offset, so that a token lands at another place in its tile.
      for (int64_t begin = batch % 5; begin < kTokens; begin += batch) {
        const int64_t n = std::min(batch, kTokens - begin);
        const Matrix part = run_slice(matmul, pool, w, x, begin, n);
        for (int64_t t = 0; t < n; ++t) {
          // Bitwise: memcmp also tells -0 from +0 and compares NaN payloads.
          ASSERT_EQ(std::memcmp(row(part, t), row(whole, begin + t), kOutputs * sizeof(float)), 0)
              << dtype_name(type) << ": token " << begin + t << " in a batch of " << n << " on " << threads
              << " threads differs from the same token in a batch of " << kTokens;
        }
      }
    }
  }
}

// Matmuls of other shapes in between (other scratch sizes, other panel splits) leave
// no trace in later results.
TEST_P(MatmulInvarianceTest, ResultsDoNotDependOnEarlierCalls) {
  const DType type = GetParam();
  std::vector<std::byte> bytes = quantized_weights(type, 41);
  const TensorView w = make_view(bytes.data(), type, kInputs, kOutputs);
  const Matrix x = activations(42);
  ThreadPool pool(2);
  Matmul fresh(quant::best_isa(), CpuNumerics::kFast), used(quant::best_isa(), CpuNumerics::kFast);
  const Matrix expected = run_slice(fresh, pool, w, x, 10, 5);
  run_slice(used, pool, w, x, 0, kTokens);
  const TensorView fewer_rows = make_view(bytes.data(), type, kInputs, 17);
  Matrix y(2, 17);
  Matrix two(2, kInputs, 0, 43);
  ASSERT_TRUE(used.run(pool, fewer_rows, two.view(), y.view()).ok());
  const Matrix again = run_slice(used, pool, w, x, 10, 5);
  ASSERT_EQ(std::memcmp(again.data.data(), expected.data.data(), again.data.size() * sizeof(float)), 0)
      << dtype_name(type);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatmulInvarianceTest, ::testing::ValuesIn(kWeightTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
