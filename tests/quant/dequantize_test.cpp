// Dequantization: bit-exact against the reference vectors, hand-built blocks that pin
// each format's layout, and the error contract.

#include "quant/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/vectors.h"

namespace pagoda::quant {
namespace {

using testing::first_bit_difference;
using testing::load_type_vectors;
using testing::reference_type_names;

// ---- Reference vectors -------------------------------------------------------------

class DequantizeReference : public ::testing::TestWithParam<std::string> {};

TEST_P(DequantizeReference, MatchesReferenceBitForBit) {
  const auto v = load_type_vectors(GetParam());
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_TRUE(can_dequantize(v->type));
  const int64_t bytes_per_row = row_bytes(v->type, v->row_length);
  std::vector<float> out(static_cast<size_t>(v->row_length));
  for (int64_t r = 0; r < v->rows; ++r) {
    const Status s = dequantize_row(v->type, v->q.data() + r * bytes_per_row, out.data(), v->row_length);
    ASSERT_TRUE(s.ok()) << s.message();
    const float* expected = v->deq.data() + r * v->row_length;
    const auto diff = first_bit_difference(out.data(), expected, out.size());
    EXPECT_FALSE(diff.has_value()) << GetParam() << " row " << r << " value " << *diff << ": got "
                                   << out[*diff] << ", reference " << expected[*diff];
  }
}

TEST_P(DequantizeReference, WholeTensorAtOnceMatchesToo) {
  const auto v = load_type_vectors(GetParam());
  ASSERT_TRUE(v.ok()) << v.status().message();
  std::vector<float> out(v->deq.size());
  ASSERT_TRUE(dequantize_row(v->type, v->q.data(), out.data(), static_cast<int64_t>(out.size())).ok());
  const auto diff = first_bit_difference(out.data(), v->deq.data(), out.size());
  EXPECT_FALSE(diff.has_value()) << GetParam() << " value " << *diff;
}

INSTANTIATE_TEST_SUITE_P(DequantizeVectors, DequantizeReference, ::testing::ValuesIn(reference_type_names()),
                         [](const auto& info) { return info.param; });

// ---- Hand-built blocks: one per layout detail ---------------------------------------

template <typename Block>
std::vector<float> dequantize_block(DType type, const Block& block) {
  std::vector<float> out(static_cast<size_t>(traits(type).block_size));
  EXPECT_TRUE(dequantize_row(type, &block, out.data(), static_cast<int64_t>(out.size())).ok());
  return out;
}

TEST(DequantizeBlocks, Q4_0LowNibblesFirstThenHigh) {
  BlockQ4_0 b;
  b.d = f32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequantize_block(DType::Q4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[j + 16], (7 - j) * 0.5f) << j + 16;
  }
}

TEST(DequantizeBlocks, Q5_0FifthBitOfValueJIsBitJOfQh) {
  BlockQ5_0 b;
  b.d = f32_to_fp16(0.25f);
  std::memset(b.qs, 0x3A, sizeof b.qs);  // low nibbles 10, high nibbles 3
  const uint32_t qh = (1u << 0) | (1u << 17) | (1u << 31);
  std::memcpy(b.qh, &qh, sizeof qh);
  const auto y = dequantize_block(DType::Q5_0, b);
  EXPECT_EQ(y[0], 2.5f);    // (10 + 16 - 16) * 0.25
  EXPECT_EQ(y[1], -1.5f);   // (10 - 16) * 0.25
  EXPECT_EQ(y[15], -1.5f);
  EXPECT_EQ(y[16], -3.25f);  // (3 - 16) * 0.25
  EXPECT_EQ(y[17], 0.75f);   // (3 + 16 - 16) * 0.25
  EXPECT_EQ(y[30], -3.25f);
  EXPECT_EQ(y[31], 0.75f);
}

TEST(DequantizeBlocks, Q4_KUpperSubBlockScaleAndMinUseTheirHighBits) {
  BlockQ4_K b;
  std::memset(&b, 0, sizeof b);
  b.d = f32_to_fp16(1.0f);
  b.dmin = f32_to_fp16(0.5f);
  // Sub-block 5: scale 37 = 0b10'0101, min 42 = 0b10'1010.
  b.scales[9] = 0xA5;   // low nibbles of scale 5 and min 5
  b.scales[1] = 0x80;   // top bits of scale 5 (must not leak into scale 1)
  b.scales[5] = 0x80;   // top bits of min 5 (must not leak into min 1)
  for (int l = 0; l < 32; ++l) b.qs[64 + l] = static_cast<uint8_t>(((l % 16) << 4) | 0x0F);
  const auto y = dequantize_block(DType::Q4_K, b);
  for (int i = 0; i < kQK_K; ++i) {
    const float expected = (i >= 160 && i < 192) ? 37.0f * ((i - 160) % 16) - 21.0f : 0.0f;
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(DequantizeBlocks, Q3_KHighBitOfValueJIsBitJDiv32OfHmaskJMod32) {
  BlockQ3_K b;
  std::memset(&b, 0, sizeof b);
  b.d = f32_to_fp16(1.0f);
  std::memset(b.scales, 0x11, 8);       // low nibbles of all 16 scales: 1
  std::memset(b.scales + 8, 0xAA, 4);   // top bits: 2, so every scale is 33 - 32 = 1
  b.hmask[5] = 0x02;                    // value 37
  b.qs[0] = 0b11100100;                 // values 0, 32, 64, 96 get low bits 0, 1, 2, 3
  const auto y = dequantize_block(DType::Q3_K, b);
  for (int i = 0; i < kQK_K; ++i) {
    float expected = -4.0f;
    if (i == 37) expected = 0.0f;
    if (i == 32) expected = -3.0f;
    if (i == 64) expected = -2.0f;
    if (i == 96) expected = -1.0f;
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(DequantizeBlocks, Q6_KSignedScalesAndSplitBits) {
  BlockQ6_K b;
  std::memset(&b, 0, sizeof b);
  b.d = f32_to_fp16(0.5f);
  for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(-(g + 1));
  b.ql[36] = 0xF0;  // value 100 = 96 + 4: high nibble of ql[4 + 32]
  b.qh[4] = 0xC0;   // and bits 6-7 of qh[4]: q = 63
  const auto y = dequantize_block(DType::Q6_K, b);
  for (int i = 0; i < kQK_K; ++i) {
    const float expected = i == 100 ? 0.5f * -7.0f * 31.0f : 16.0f * static_cast<float>(i / 16 + 1);
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(DequantizeBlocks, IQ4_XSSubBlockScaleFromLowAndHighParts) {
  BlockIQ4_XS b;
  std::memset(&b, 0, sizeof b);
  b.d = f32_to_fp16(1.0f);
  b.scales_h = 0xAAAA;  // high bits 2 everywhere: scale 32 + low - 32 = low
  b.scales_l[1] = 0xD0; // sub-block 3 low part 13, sub-block 2 low part 0
  for (int j = 0; j < 16; ++j) b.qs[48 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequantize_block(DType::IQ4_XS, b);
  for (int i = 0; i < kQK_K; ++i) {
    float expected = 0.0f;
    if (i >= 96 && i < 112) expected = 13.0f * kIQ4NLValues[i - 96];
    if (i >= 112 && i < 128) expected = 13.0f * kIQ4NLValues[15 - (i - 112)];
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(DequantizeBlocks, HalfAndBFloat16AreExact) {
  const uint16_t halves[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00};
  float y[5];
  ASSERT_TRUE(dequantize_row(DType::F16, halves, y, 5).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 65504.0f);
  EXPECT_EQ(y[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(y[4], std::numeric_limits<float>::infinity());
  const uint16_t bf16[] = {0x3F80, 0xC0A0};
  ASSERT_TRUE(dequantize_row(DType::BF16, bf16, y, 2).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -5.0f);
}

// ---- Error contract -----------------------------------------------------------------

TEST(DequantizeRow, SupportsTheStorageFormats) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                  DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS}) {
    EXPECT_TRUE(can_dequantize(t)) << dtype_name(t);
  }
  EXPECT_FALSE(can_dequantize(DType::IQ2_XXS));
  EXPECT_FALSE(can_dequantize(DType::Q8_1));
}

TEST(DequantizeRow, PartialBlockIsInvalidArgument) {
  std::vector<uint8_t> src(1024);
  std::vector<float> dst(512);
  const Status s = dequantize_row(DType::Q4_K, src.data(), dst.data(), 300);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("300"), std::string::npos) << s.message();
  EXPECT_EQ(dequantize_row(DType::Q4_0, src.data(), dst.data(), 33).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dequantize_row(DType::F16, src.data(), dst.data(), -2).code(), ErrorCode::kInvalidArgument);
}

TEST(DequantizeRow, NullBufferIsInvalidArgumentUnlessEmpty) {
  std::vector<float> dst(32);
  EXPECT_EQ(dequantize_row(DType::Q8_0, nullptr, dst.data(), 32).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(dequantize_row(DType::Q8_0, nullptr, nullptr, 0).ok());
}

TEST(DequantizeRow, UnsupportedTypeSaysWhich) {
  std::vector<uint8_t> src(1024);
  std::vector<float> dst(256);
  const Status s = dequantize_row(DType::IQ2_XXS, src.data(), dst.data(), 256);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("iq2_xxs"), std::string::npos) << s.message();
  const Status bogus = dequantize_row(static_cast<DType>(999), src.data(), dst.data(), 256);
  EXPECT_EQ(bogus.code(), ErrorCode::kUnsupported);
  EXPECT_NE(bogus.message().find("type id 999"), std::string::npos) << bogus.message();
}

TEST(DequantizeRow, ReadsBlocksAtAnyAlignment) {
  const auto v = load_type_vectors("q6_K");
  ASSERT_TRUE(v.ok()) << v.status().message();
  const int64_t n = v->row_length;
  std::vector<uint8_t> shifted(static_cast<size_t>(row_bytes(DType::Q6_K, n)) + 1);
  std::memcpy(shifted.data() + 1, v->q.data(), shifted.size() - 1);
  std::vector<float> out(static_cast<size_t>(n));
  ASSERT_TRUE(dequantize_row(DType::Q6_K, shifted.data() + 1, out.data(), n).ok());
  EXPECT_FALSE(first_bit_difference(out.data(), v->deq.data(), out.size()).has_value());
}

}  // namespace
}  // namespace pagoda::quant
