// small_int_to_f32 (backend/cuda/small_int_float.h), the piece decoders' integer to float
// step, on the host: bit for bit the conversion it replaces, for every value the formats
// give it (4-, 6- and 8-bit) with their offsets, and at the ends of its range.

#include "backend/cuda/small_int_float.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

namespace pagoda::backend::cuda_testing {
namespace {

template <int kOffset>
void expect_conversion(uint32_t q) {
  const float expected = static_cast<float>(static_cast<int32_t>(q) - kOffset);
  const float got = cuda::small_int_to_f32<kOffset>(q);
  ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected)) << "q " << q << ", offset " << kOffset;
}

TEST(SmallIntToF32, IsTheConversionForEveryFormatsValues) {
  for (uint32_t q = 0; q < 256; ++q) {
    expect_conversion<0>(q);    // Q4_1, Q4_K nibbles
    expect_conversion<8>(q);    // Q4_0
    expect_conversion<32>(q);   // Q6_K
    expect_conversion<128>(q);  // Q8_0 (byte ^ 0x80)
  }
  for (const uint32_t q : {uint32_t{1} << 20, (uint32_t{1} << 23) - 1}) {
    expect_conversion<0>(q);
    expect_conversion<128>(q);
  }
}

}  // namespace
}  // namespace pagoda::backend::cuda_testing
