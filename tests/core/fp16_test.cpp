#include "core/fp16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace pagoda {
namespace {

TEST(Fp16, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_fp16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(f32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);  // ties to even rounds up into infinity
  EXPECT_EQ(f32_to_fp16(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(f32_to_fp16(2.9802322e-8f), 0x0000);  // exactly half of it: ties to even (0)
  EXPECT_EQ(f32_to_fp16(1.0f + 1.0f / 2048.0f), 0x3c00);  // tie, even stays
  EXPECT_EQ(f32_to_fp16(1.0f + 3.0f / 2048.0f), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(fp16_to_f32(0x3555), 0.33325195f);
  EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Fp16, RoundingMatchesNearestEvenOnAGrid) {
  // Every float between two adjacent halves rounds to the nearer one (ties to even).
  for (uint32_t h = 0x0400; h < 0x7bff; h += 37) {
    const float lo = fp16_to_f32(static_cast<uint16_t>(h));
    const float hi = fp16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = 0.5f * (lo + hi);
    EXPECT_EQ(f32_to_fp16(std::nextafter(mid, lo)), h);
    EXPECT_EQ(f32_to_fp16(std::nextafter(mid, hi)), h + 1);
    EXPECT_EQ(f32_to_fp16(mid), (h & 1) ? h + 1 : h);
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x7fc00001u)) & 0x7fc0, 0x7fc0);  // NaN stays NaN
}

}  // namespace
}  // namespace pagoda
