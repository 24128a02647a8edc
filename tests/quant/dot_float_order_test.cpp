// The F32 and F16 vector dot products on AVX2 sum in the reference build's order (its
// AVX-512 vec_dot, see quant/dot_float_avx2.cpp), bit for bit, against scalar models:
// four 16-lane accumulators over each 64 values, folded 0 + 2, 1 + 3, then 0 + 1 and
// added across lanes ((i, i + 8), (i, i + 4), (0 + 2) + (1 + 3)); then the n % 64
// leftovers: F16 as float products summed in double; F32 in float, products of full
// groups of 8 rounded before being added in order, the last n % 8 fused into the sum.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "quant/dot.h"

namespace pagoda::quant {
namespace {

// The vector part: the first n / 64 * 64 values.
float vector_part(const std::vector<float>& x, const std::vector<float>& y) {
  const size_t n_vector = x.size() / 64 * 64;
  float acc[4][16] = {};
  for (size_t i = 0; i < n_vector; i += 64) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 16; ++l) acc[j][l] = std::fma(x[i + 16 * j + l], y[i + 16 * j + l], acc[j][l]);
    }
  }
  float lane[16], half[8], quarter[4];
  for (int l = 0; l < 16; ++l) lane[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  for (int l = 0; l < 8; ++l) half[l] = lane[l] + lane[l + 8];
  for (int l = 0; l < 4; ++l) quarter[l] = half[l] + half[l + 4];
  return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

float f32_model(const std::vector<float>& x, const std::vector<float>& y) {
  const size_t n = x.size(), n_vector = n / 64 * 64, n_grouped = n_vector + (n - n_vector) / 8 * 8;
  float sum = vector_part(x, y);
  for (size_t i = n_vector; i < n_grouped; ++i) {
    const float product = x[i] * y[i];
    sum += product;
  }
  for (size_t i = n_grouped; i < n; ++i) sum = std::fma(x[i], y[i], sum);
  return sum;
}

float f16_model(const std::vector<float>& x, const std::vector<float>& y) {
  double sum = vector_part(x, y);
  for (size_t i = x.size() / 64 * 64; i < x.size(); ++i) sum += static_cast<double>(x[i] * y[i]);
  return static_cast<float>(sum);
}

std::vector<float> random_row(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = fp16_to_f32(f32_to_fp16(dist(rng)));  // exact in f16 too
  return v;
}

std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_fp16(v[i]);
  return h;
}

class DotFloatOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_available(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
    f32_ = find_dot_kernel(DType::F32, Isa::kAvx2);
    f16_ = find_dot_kernel(DType::F16, Isa::kAvx2);
    ASSERT_TRUE(f32_ && f16_);
  }
  const DotKernel* f32_ = nullptr;
  const DotKernel* f16_ = nullptr;
};

TEST_F(DotFloatOrder, RandomRowsOfEveryTailLength) {
  for (const size_t n : {8, 64, 72, 75, 128, 172, 200, 256, 1000}) {
    const std::vector<float> x = random_row(n, static_cast<uint32_t>(n)), y = random_row(n, static_cast<uint32_t>(n + 1));
    EXPECT_EQ(f32_->dot(static_cast<int64_t>(n), x.data(), y.data()), f32_model(x, y)) << n;
    const std::vector<uint16_t> xh = to_f16(x), yh = to_f16(y);
    EXPECT_EQ(f16_->dot(static_cast<int64_t>(n), xh.data(), yh.data()), f16_model(x, y)) << n;
  }
}

// A row whose F32 sum tells the tail's roundings apart: the vector part leaves -1; value
// 64 (in the grouped leftovers) adds (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24, whose product
// rounds to 1 + 2^-11; value 65 subtracts 1; value 72 (in the fused remainder) adds the
// same square again, this time unrounded. Fused everywhere, unfused everywhere, and the
// reference's split all give different sums.
TEST_F(DotFloatOrder, F32LeftoversRoundProductsInGroupsOfEightThenFuse) {
  const size_t n = 75;
  std::vector<float> x(n, 0.0f), y(n, 0.0f);
  const float a = 1.0f + std::ldexp(1.0f, -12);
  x[0] = -1.0f, y[0] = 1.0f;
  x[64] = y[64] = a;
  x[65] = -1.0f, y[65] = 1.0f;
  x[72] = y[72] = a;
  const float expected = std::ldexp(1.0f, -10) + std::ldexp(1.0f, -24);
  ASSERT_EQ(f32_model(x, y), expected);
  EXPECT_EQ(f32_->dot(static_cast<int64_t>(n), x.data(), y.data()), expected);

  float all_fused = -1.0f, all_unfused = -1.0f;
  for (size_t i = 64; i < n; ++i) {
    all_fused = std::fma(x[i], y[i], all_fused);
    const float product = x[i] * y[i];
    all_unfused += product;
  }
  EXPECT_NE(all_fused, expected);
  EXPECT_NE(all_unfused, expected);
}

}  // namespace
}  // namespace pagoda::quant
