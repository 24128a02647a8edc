// The AVX-512 VNNI strip kernels (16 rows, vpdpbusd) give the same bits as the AVX2
// strip kernels of the same type, for every token count (the single-token path, one
// 8-token call, 4-, 2-token and lone leftovers, several passes over the activations), for
// partial strips and panels, and on extreme weights and activations (the signed formats
// are multiplied with 128 added to the weights, which must come off exactly). So a
// machine with VNNI decodes the same tokens as one without, and batch invariance holds
// across the two kernels.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "matmul_compare.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

constexpr DType kTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1,
                            DType::IQ4_NL, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS, DType::Q3_K, DType::Q2_K};
// One super-block, three (an odd count) and four; the 32-value formats also take 576
// (18 blocks: kernels that step 8 blocks at a time have 2 left over).
std::vector<int64_t> input_sizes(DType type) {
  if (traits(type).block_size == 32) return {256, 576, 768, 1024};
  return {256, 768, 1024};
}
constexpr int64_t kInputs = 1024;

using MatmulVnniTest = IsaKernelTest<Isa::kAvx512Vnni>;

TEST_P(MatmulVnniTest, SameBitsAsAvx2Strips) {
  const DType type = GetParam();
  ASSERT_EQ(find_tile_kernel(type, Isa::kAvx512Vnni)->strip_rows, 16) << "not the VNNI kernel";
  expect_same_bits_as(Isa::kAvx512Vnni, Isa::kAvx2, type, input_sizes(type), {1, 2, 3, 4, 5, 7, 8, 13, 14, 16, 150});
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
  std::vector<std::byte> bytes = quantized_rows(type, values, n_out, kInputs);
  const TensorView w = make_view(bytes.data(), type, kInputs, n_out);
  Matrix x = extreme_activations(n_tokens, kInputs);
  expect_same_bits(run_matmul(Isa::kAvx512Vnni, 2, w, x, n_out), run_matmul(Isa::kAvx2, 2, w, x, n_out),
                   std::string(dtype_name(type)) + " extremes");
}

INSTANTIATE_TEST_SUITE_P(StripTypes, MatmulVnniTest, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
