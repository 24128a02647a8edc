// The activation quantizers the dot kernels hand out per ISA: every ISA's must give the
// scalar one's bytes, for ordinary activations and for the blocks where rounding or the
// scale is delicate (exact ties, a zero block, tiny and huge magnitudes, equal magnitudes
// of both signs, infinities and NaNs, which the AVX2 forms leave to the scalar code).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/dot.h"

namespace pagoda::quant {
namespace {

constexpr int64_t kBlocks = 64;

// Blocks of `block` values (32, or a Q8_K super-block's 256), each of a different kind.
std::vector<float> delicate_activations(std::mt19937& rng, int block_size) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kBlocks * block_size);
  for (int64_t b = 0; b < kBlocks; ++b) {
    float* block = x.data() + b * block_size;
    const float magnitude = std::ldexp(1.0f, static_cast<int>(b % 16) * 8 - 64);  // 2^-64 .. 2^56
    for (int i = 0; i < block_size; ++i) block[i] = normal(rng) * magnitude;
    switch (b % 10) {
      case 1:  // amax 127: every value k + 0.5 is an exact tie at scale 1 (-1 for Q8_K)
        block[0] = b % 20 == 1 ? 127.0f : -127.0f;
        for (int i = 1; i < block_size; ++i) block[i] = static_cast<float>(i % 32 - 16) + 0.5f;
        break;
      case 2:
        std::memset(block, 0, block_size * sizeof(float));
        block[3] = -0.0f;
        break;
      case 3:  // 127 / amax overflows: the scalar quantizer's clamped path
        for (int i = 0; i < block_size; ++i) block[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i);
        break;
      case 4:
        block[b % block_size] = std::numeric_limits<float>::infinity();
        break;
      case 5:
        block[(b * 7) % block_size] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 6:  // the largest magnitude is negative
        block[9] = -4.0f * magnitude;
        break;
      case 7:  // equal magnitudes of both signs: Q8_K keeps the first one's sign
        block[(b * 5) % block_size] = 8.0f * magnitude * (b % 20 == 7 ? 1.0f : -1.0f);
        block[block_size - 1 - (b * 5) % (block_size / 2)] = -block[(b * 5) % block_size];
        break;
      case 8:  // a block of a few distinct values, many of them rounding ties after scaling
        for (int i = 0; i < block_size; ++i) block[i] = magnitude * static_cast<float>(i % 7 - 3) / 6.0f;
        break;
      default:
        break;
    }
  }
  return x;
}

class ActivationQuantizerIsaTest : public ::testing::TestWithParam<DType> {};

TEST_P(ActivationQuantizerIsaTest, EveryIsaGivesTheScalarBytes) {
  const DType weight = GetParam();
  const DotKernel* scalar = find_dot_kernel(weight, Isa::kScalar);
  ASSERT_NE(scalar, nullptr);
  const int block_size = scalar->activation == DType::Q8_K ? static_cast<int>(kQK_K) : static_cast<int>(kQK);
  const int64_t n = kBlocks * block_size;
  const size_t bytes = static_cast<size_t>(row_bytes(scalar->activation, n));
  std::mt19937 rng(2024u + static_cast<unsigned>(weight));
  for (int round = 0; round < 50; ++round) {
    const std::vector<float> x = delicate_activations(rng, block_size);
    std::vector<uint8_t> expected(bytes);
    scalar->quantize(x.data(), expected.data(), n);
    for (Isa isa : available_isas()) {
      const DotKernel* kernel = find_dot_kernel(weight, isa);
      ASSERT_NE(kernel, nullptr);
      ASSERT_EQ(kernel->activation, scalar->activation);
      std::vector<uint8_t> got(bytes, 0xa5);
      kernel->quantize(x.data(), got.data(), n);
      for (size_t i = 0; i < bytes; ++i) {
        ASSERT_EQ(got[i], expected[i]) << isa_name(isa) << ", round " << round << ", byte " << i << " (block "
                                       << i / (bytes / kBlocks) << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ThirtyTwoValueFormats, ActivationQuantizerIsaTest,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                           DType::IQ4_NL),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(SuperBlockFormats, ActivationQuantizerIsaTest,
                         ::testing::Values(DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                                           DType::IQ4_XS),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

TEST(ActivationQuantizerTest, AvxTwoHasItsOwnQuantizer) {
  if (!isa_available(Isa::kAvx2)) GTEST_SKIP() << "this CPU does not run AVX2";
  // Else the test above would compare the scalar quantizer with itself.
  EXPECT_NE(find_dot_kernel(DType::Q4_1, Isa::kAvx2)->quantize, find_dot_kernel(DType::Q4_1, Isa::kScalar)->quantize);
  EXPECT_NE(find_dot_kernel(DType::Q8_0, Isa::kAvx2)->quantize, find_dot_kernel(DType::Q8_0, Isa::kScalar)->quantize);
  EXPECT_NE(find_dot_kernel(DType::Q4_K, Isa::kAvx2)->quantize, find_dot_kernel(DType::Q4_K, Isa::kScalar)->quantize);
}

}  // namespace
}  // namespace pagoda::quant
