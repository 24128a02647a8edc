// The AVX-512 VNNI strip kernels (16 rows, vpdpbusd) give the same bits as the AVX2
// strip kernels of the same type, for every token count (the single-token path, one
// 8-token call, 4-token and lone leftovers, several passes over the activations), for
// partial strips and panels, and on extreme weights and activations (the signed formats
// are multiplied with 128 added to the weights, which must come off exactly). So a
// machine with VNNI decodes the same tokens as one without, and batch invariance holds
// across the two kernels.

#include <gtest/gtest.h>

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

constexpr DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1,
                            DType::IQ4_NL, DType::Q4_K, DType::Q5_K, DType::Q6_K};
// One super-block, three (an odd count) and four; the 32-value formats also take 576
// (18 blocks: kernels that step 8 blocks at a time have 2 left over).
std::vector<int64_t> input_sizes(DType type) {
  if (traits(type).block_size == 32) return {256, 576, 768, 1024};
  return {256, 768, 1024};
}
constexpr int64_t kInputs = 1024;

std::vector<std::byte> quantized(DType type, const std::vector<float>& values, int64_t n_out,
                                 int64_t n_in = kInputs) {
  const size_t row = size_t(row_bytes(type, n_in));
  std::vector<std::byte> bytes(row * size_t(n_out));
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, &values[size_t(r * n_in)], bytes.data() + size_t(r) * row, n_in).ok());
  }
  return bytes;
}

Matrix run(Isa isa, int threads, const TensorView& w, Matrix& x, int64_t n_out) {
  ThreadPool pool(threads);
  Matmul matmul(isa, CpuNumerics::kFast);
  Matrix y(x.rows, n_out, 2);
  EXPECT_TRUE(matmul.run(pool, w, x.view(), y.view()).ok());
  return y;
}

void expect_same_bits(const Matrix& vnni, const Matrix& avx2, const std::string& what) {
  for (int64_t t = 0; t < vnni.rows; ++t) {
    ASSERT_EQ(std::memcmp(vnni.data.data() + t * vnni.stride, avx2.data.data() + t * avx2.stride,
                          size_t(vnni.cols) * sizeof(float)),
              0)
        << what << ": token " << t << " of " << vnni.rows;
  }
}

class MatmulVnniTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!quant::isa_available(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
  }
};

TEST_P(MatmulVnniTest, SameBitsAsAvx2Strips) {
  const DType type = GetParam();
  ASSERT_EQ(find_tile_kernel(type, Isa::kAvx512Vnni)->strip_rows, 16) << "not the VNNI kernel";
  // 301 rows: a partial 16-row strip and several panels; 40: less than three strips.
  for (const int64_t n_in : input_sizes(type)) {
  for (const int64_t n_out : {int64_t{301}, int64_t{40}}) {
    std::vector<std::byte> bytes = quantized(type, random_values(size_t(n_in * n_out), 11, 0.5f), n_out, n_in);
    const TensorView w = make_view(bytes.data(), type, n_in, n_out);
    for (const int64_t n_tokens : {1, 3, 4, 5, 8, 13, 16, 150}) {
      Matrix x(n_tokens, n_in, 3, 12 + uint32_t(n_tokens), 2.0f);
      for (const int threads : {1, 2}) {
        const std::string what = std::string(dtype_name(type)) + ", " + std::to_string(n_in) + " inputs, " +
                                 std::to_string(n_out) + " rows, " + std::to_string(n_tokens) + " tokens, " +
                                 std::to_string(threads) + " threads";
        expect_same_bits(run(Isa::kAvx512Vnni, threads, w, x, n_out), run(Isa::kAvx2, threads, w, x, n_out),
                         what);
      }
    }
  }
  }
}

// Weights and activations at the ends of their ranges: every quant at +-127 (Q8_0), at
// 0 or 15 / 31 / 63 (the 4-, 5- and 6-bit formats), activations of one sign or alternating.
TEST_P(MatmulVnniTest, SameBitsOnExtremeValues) {
  const DType type = GetParam();
  const int64_t n_out = 48, n_tokens = 12;
  std::vector<float> values(size_t(kInputs * n_out));
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t row = i / kInputs;
    values[i] = row % 3 == 0 ? 1.0f : row % 3 == 1 ? -1.0f : (i % 2 ? 1.0f : -1.0f);
  }
  std::vector<std::byte> bytes = quantized(type, values, n_out);
  const TensorView w = make_view(bytes.data(), type, kInputs, n_out);
  Matrix x(n_tokens, kInputs, 0);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < kInputs; ++i) x.at(t, i) = t % 3 == 0 ? 3.0f : t % 3 == 1 ? -3.0f : (i % 2 ? 3.0f : -3.0f);
  }
  expect_same_bits(run(Isa::kAvx512Vnni, 2, w, x, n_out), run(Isa::kAvx2, 2, w, x, n_out),
                   std::string(dtype_name(type)) + " extremes");
}

INSTANTIATE_TEST_SUITE_P(StripTypes, MatmulVnniTest, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
