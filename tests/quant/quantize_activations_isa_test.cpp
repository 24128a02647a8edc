// The activation quantizers the dot kernels hand out per ISA: every ISA's must give the
// scalar one's bytes, for ordinary activations and for the blocks where rounding or the
// scale is delicate (exact ties, a zero block, tiny and huge magnitudes, infinities and
// NaNs, which the AVX2 form leaves to the scalar code).

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

// Blocks of 32 values, each block of a different kind.
std::vector<float> delicate_activations(std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kBlocks * kQK);
  for (int64_t b = 0; b < kBlocks; ++b) {
    float* block = x.data() + b * kQK;
    const float magnitude = std::ldexp(1.0f, static_cast<int>(b % 16) * 8 - 64);  // 2^-64 .. 2^56
    for (int i = 0; i < kQK; ++i) block[i] = normal(rng) * magnitude;
    switch (b % 8) {
      case 1:  // amax 127: every value k + 0.5 is an exact tie at scale 1
        block[0] = 127.0f;
        for (int i = 1; i < kQK; ++i) block[i] = static_cast<float>(i - 16) + 0.5f;
        break;
      case 2:
        std::memset(block, 0, kQK * sizeof(float));
        block[3] = -0.0f;
        break;
      case 3:  // 127 / amax overflows: the scalar quantizer's clamped path
        for (int i = 0; i < kQK; ++i) block[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i);
        break;
      case 4:
        block[b % kQK] = std::numeric_limits<float>::infinity();
        break;
      case 5:
        block[(b * 7) % kQK] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 6:  // the largest magnitude is negative
        block[9] = -4.0f * magnitude;
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
  const size_t bytes = static_cast<size_t>(row_bytes(scalar->activation, kBlocks * kQK));
  std::mt19937 rng(2024u + static_cast<unsigned>(weight));
  for (int round = 0; round < 50; ++round) {
    const std::vector<float> x = delicate_activations(rng);
    std::vector<uint8_t> expected(bytes);
    scalar->quantize(x.data(), expected.data(), kBlocks * kQK);
    for (Isa isa : available_isas()) {
      const DotKernel* kernel = find_dot_kernel(weight, isa);
      ASSERT_NE(kernel, nullptr);
      ASSERT_EQ(kernel->activation, scalar->activation);
      std::vector<uint8_t> got(bytes, 0xa5);
      kernel->quantize(x.data(), got.data(), kBlocks * kQK);
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

TEST(ActivationQuantizerTest, AvxTwoHasItsOwnQuantizer) {
  if (!isa_available(Isa::kAvx2)) GTEST_SKIP() << "this CPU does not run AVX2";
  // Else the test above would compare the scalar quantizer with itself.
  EXPECT_NE(find_dot_kernel(DType::Q4_1, Isa::kAvx2)->quantize, find_dot_kernel(DType::Q4_1, Isa::kScalar)->quantize);
  EXPECT_NE(find_dot_kernel(DType::Q8_0, Isa::kAvx2)->quantize, find_dot_kernel(DType::Q8_0, Isa::kScalar)->quantize);
}

}  // namespace
}  // namespace pagoda::quant
