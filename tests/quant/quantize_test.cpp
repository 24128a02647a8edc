// Quantization: byte-exact against the reference vectors, error bounds on random data,
// edge cases (all zeros, an outlier, any alignment) and the error contract.

#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/vectors.h"

namespace pagoda::quant {
namespace {

using testing::first_byte_difference;
using testing::load_type_vectors;
using testing::reference_type_names;

std::vector<uint8_t> quantize(DType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(static_cast<size_t>(row_bytes(type, static_cast<int64_t>(x.size()))));
  const Status s = quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(s.ok()) << s.message();
  return q;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const std::vector<uint8_t> q = quantize(type, x);
  std::vector<float> y(x.size());
  const Status s = dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(y.size()));
  EXPECT_TRUE(s.ok()) << s.message();
  return y;
}

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// ---- Reference vectors -------------------------------------------------------------

class QuantizeReference : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizeReference, MatchesReferenceByteForByte) {
  const auto v = load_type_vectors(GetParam());
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_TRUE(can_quantize(v->type));
  const int64_t bytes_per_row = row_bytes(v->type, v->row_length);
  const int64_t block_bytes = traits(v->type).type_size;
  std::vector<uint8_t> out(static_cast<size_t>(bytes_per_row));
  for (int64_t r = 0; r < v->rows; ++r) {
    const Status s = quantize_row(v->type, v->src.data() + r * v->row_length, out.data(), v->row_length);
    ASSERT_TRUE(s.ok()) << s.message();
    const uint8_t* expected = v->q.data() + r * bytes_per_row;
    const auto diff = first_byte_difference(out.data(), expected, out.size());
    EXPECT_FALSE(diff.has_value()) << GetParam() << " row " << r << " block " << *diff / block_bytes
                                   << " byte " << *diff % block_bytes << ": got " << int{out[*diff]}
                                   << ", reference " << int{expected[*diff]};
  }
}

INSTANTIATE_TEST_SUITE_P(QuantizeVectors, QuantizeReference, ::testing::ValuesIn(reference_type_names()),
                         [](const auto& info) { return info.param; });

// ---- Error bounds on random data -----------------------------------------------------

// 32-wide formats: within each block, |x - y| <= bound * max|x| (the scale's share of
// the block's range, plus the fp16 rounding of d and m).
struct BlockBound {
  DType type;
  float bound;
};
class QuantizeBlockError : public ::testing::TestWithParam<BlockBound> {};

TEST_P(QuantizeBlockError, EveryValueWithinTheBlockBound) {
  const auto [type, bound] = GetParam();
  const std::vector<float> x = gaussian(32 * 512, 7);
  const std::vector<float> y = round_trip(type, x);
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t j = b; j < b + 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    for (size_t j = b; j < b + 32; ++j) {
      ASSERT_LE(std::fabs(x[j] - y[j]), bound * amax) << dtype_name(type) << " value " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    QuantizeBounds, QuantizeBlockError,
    ::testing::Values(BlockBound{DType::Q8_0, (0.5f + 127.0f / 2048) / 127},  // d/2, d = amax/127
                      BlockBound{DType::Q4_0, (1.0f + 8.0f / 2048) / 8},      // d at the clamped end
                      BlockBound{DType::Q4_1, 2 * (0.5f + 16.0f / 2048) / 15},  // d/2, d = range/15
                      BlockBound{DType::Q5_0, (1.0f + 16.0f / 2048) / 16},
                      BlockBound{DType::Q5_1, 2 * (0.5f + 32.0f / 2048) / 31}),
    [](const auto& info) { return std::string(dtype_name(info.param.type)); });

// Every format: relative RMS error on Gaussian data below a per-type ceiling (a little
// above what the format achieves, far below what any layout mistake gives).
struct RmsBound {
  DType type;
  double max_relative_rms;
};
class QuantizeRmsError : public ::testing::TestWithParam<RmsBound> {};

TEST_P(QuantizeRmsError, RelativeRmsErrorBelowCeiling) {
  const auto [type, ceiling] = GetParam();
  const std::vector<float> x = gaussian(256 * 64, 11);
  const std::vector<float> y = round_trip(type, x);
  double err2 = 0, sig2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err2 += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
    sig2 += double{x[i]} * x[i];
  }
  EXPECT_LE(std::sqrt(err2 / sig2), ceiling) << dtype_name(type);
}

INSTANTIATE_TEST_SUITE_P(
    QuantizeBounds, QuantizeRmsError,
    ::testing::Values(RmsBound{DType::F16, 2.5e-4}, RmsBound{DType::BF16, 2e-3},
                      RmsBound{DType::Q8_0, 0.007}, RmsBound{DType::Q4_0, 0.1},
                      RmsBound{DType::Q4_1, 0.09}, RmsBound{DType::Q5_0, 0.05},
                      RmsBound{DType::Q5_1, 0.045}, RmsBound{DType::Q2_K, 0.33},
                      RmsBound{DType::Q3_K, 0.17}, RmsBound{DType::Q4_K, 0.08},
                      RmsBound{DType::Q5_K, 0.04}, RmsBound{DType::Q6_K, 0.02},
                      RmsBound{DType::IQ4_NL, 0.085}, RmsBound{DType::IQ4_XS, 0.085},
                      RmsBound{DType::Q8_K, 0.008}),
    [](const auto& info) { return std::string(dtype_name(info.param.type)); });

// ---- Edge cases ----------------------------------------------------------------------

const DType kBlockTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                             DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,
                             DType::IQ4_NL, DType::IQ4_XS, DType::Q8_K};

TEST(QuantizeEdgeCases, AllZeroRowsComeBackAsZeros) {
  const std::vector<float> x(512, 0.0f);
  for (DType type : kBlockTypes) {
    const std::vector<float> y = round_trip(type, x);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << dtype_name(type) << " value " << i;
  }
}

TEST(QuantizeEdgeCases, ZeroBlockBesideNonZeroBlockStaysZero) {
  std::vector<float> x = gaussian(512, 3);
  std::fill(x.begin() + 256, x.end(), 0.0f);
  for (DType type : kBlockTypes) {
    const std::vector<float> y = round_trip(type, x);
    for (size_t i = 256; i < y.size(); ++i) ASSERT_EQ(y[i], 0.0f) << dtype_name(type) << " value " << i;
  }
}

// A block with one value 1000 times the others: the outlier is kept to within half a
// percent, nothing overflows, and no value comes back larger than the outlier.
TEST(QuantizeEdgeCases, OneHugeOutlierIsReconstructed) {
  std::vector<float> x = gaussian(256, 5);
  constexpr size_t kAt = 77;
  x[kAt] = -1000.0f;
  for (DType type : kBlockTypes) {
    const std::vector<float> y = round_trip(type, x);
    EXPECT_NEAR(y[kAt], x[kAt], 0.005f * 1000.0f) << dtype_name(type);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(type) << " value " << i;
      ASSERT_LE(std::fabs(y[i]), 1000.0f * 1.01f) << dtype_name(type) << " value " << i;
    }
  }
}

// NaN, infinities and values near FLT_MAX in one super-block are the caller's problem,
// but they must stay in that block: the next one quantizes exactly as it would alone.
TEST(QuantizeEdgeCases, NonFiniteValuesStayInTheirBlock) {
  const float kInf = std::numeric_limits<float>::infinity();
  const std::vector<float> good = gaussian(256, 13);
  std::vector<float> row = gaussian(256, 17);
  row[3] = std::numeric_limits<float>::quiet_NaN();
  row[40] = kInf;
  row[41] = -kInf;
  row[100] = 3e38f;
  row[200] = -3e38f;
  row[201] = 1e-40f;  // subnormal
  row.insert(row.end(), good.begin(), good.end());
  for (DType type : kBlockTypes) {
    const std::vector<uint8_t> alone = quantize(type, good);
    const std::vector<uint8_t> both = quantize(type, row);
    ASSERT_EQ(both.size(), 2 * alone.size());
    EXPECT_EQ(std::memcmp(both.data() + alone.size(), alone.data(), alone.size()), 0) << dtype_name(type);
  }
}

TEST(QuantizeEdgeCases, WritesAndReadsAtAnyAlignment) {
  const std::vector<float> x = gaussian(512, 9);
  for (DType type : kBlockTypes) {
    const std::vector<uint8_t> aligned = quantize(type, x);
    std::vector<float> x_shifted(x.size() + 1);
    std::copy(x.begin(), x.end(), x_shifted.begin() + 1);
    std::vector<uint8_t> shifted(aligned.size() + 1);
    ASSERT_TRUE(quantize_row(type, x_shifted.data() + 1, shifted.data() + 1, 512).ok());
    EXPECT_EQ(std::memcmp(shifted.data() + 1, aligned.data(), aligned.size()), 0) << dtype_name(type);
  }
}

TEST(QuantizeEdgeCases, HalfPrecisionRoundsToNearestEven) {
  const std::vector<float> x = {1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 65520.0f,
                                std::numeric_limits<float>::infinity()};
  const std::vector<uint8_t> q = quantize(DType::F16, x);
  uint16_t h[4];
  std::memcpy(h, q.data(), sizeof h);
  EXPECT_EQ(h[0], 0x3C00);
  EXPECT_EQ(h[1], 0x3C02);
  EXPECT_EQ(h[2], 0x7C00);
  EXPECT_EQ(h[3], 0x7C00);
  const std::vector<uint8_t> b = quantize(DType::BF16, {1.0f + 1.0f / 256, 1.0f + 3.0f / 256});
  uint16_t bf[2];
  std::memcpy(bf, b.data(), sizeof bf);
  EXPECT_EQ(bf[0], 0x3F80);
  EXPECT_EQ(bf[1], 0x3F82);
}

// ---- Error contract ------------------------------------------------------------------

TEST(QuantizeRow, SupportsTheStorageFormats) {
  for (DType type : kBlockTypes) EXPECT_TRUE(can_quantize(type)) << dtype_name(type);
  for (DType type : {DType::F32, DType::F16, DType::BF16}) EXPECT_TRUE(can_quantize(type));
  EXPECT_FALSE(can_quantize(DType::IQ2_XXS));
  EXPECT_FALSE(can_quantize(DType::TQ1_0));
}

TEST(QuantizeRow, PartialBlockIsInvalidArgument) {
  const std::vector<float> x(600, 1.0f);
  std::vector<uint8_t> q(1024);
  const Status s = quantize_row(DType::Q6_K, x.data(), q.data(), 600);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("600"), std::string::npos) << s.message();
  EXPECT_EQ(quantize_row(DType::Q8_0, x.data(), q.data(), 31).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(quantize_row(DType::F16, x.data(), q.data(), -1).code(), ErrorCode::kInvalidArgument);
}

TEST(QuantizeRow, NullBufferIsInvalidArgumentUnlessEmpty) {
  const std::vector<float> x(32, 1.0f);
  EXPECT_EQ(quantize_row(DType::Q4_0, x.data(), nullptr, 32).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(quantize_row(DType::Q4_0, nullptr, nullptr, 0).ok());
}

TEST(QuantizeRow, UnsupportedTypeSaysWhich) {
  const std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> q(1024);
  const Status s = quantize_row(DType::IQ3_S, x.data(), q.data(), 256);
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("iq3_s"), std::string::npos) << s.message();
  const Status bogus = quantize_row(static_cast<DType>(4242), x.data(), q.data(), 256);
  EXPECT_EQ(bogus.code(), ErrorCode::kUnsupported);
  EXPECT_NE(bogus.message().find("type id 4242"), std::string::npos) << bogus.message();
}

}  // namespace
}  // namespace pagoda::quant
