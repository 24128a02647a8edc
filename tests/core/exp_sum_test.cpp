#include "core/exp_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace pagoda {
namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  return x;
}

// Within a few float ulps of exp in double, the terms and the sum; weights of values more
// than 87 below the shift are 0.
TEST(ExpSum, WeightsAreTheExpOfTheScaledShiftedValues) {
  std::vector<float> x = random_logits(1001, 1, 20.0f);
  x[5] = -1000.0f;
  float max = x[0];
  for (float v : x) max = std::max(max, v);
  std::vector<float> w(x.size());
  const float scale = 1.0f / 0.7f;
  const double sum = exp_sum(x.data(), static_cast<int64_t>(x.size()), max, scale, w.data());
  double expected_sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = static_cast<double>((x[i] - max) * scale);
    const double expected = t < -87.0 ? 0.0 : std::exp(t);
    expected_sum += expected;
    ASSERT_NEAR(w[i], expected, 4e-7 * expected) << i;
  }
  EXPECT_EQ(w[5], 0.0f);
  EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
}

// The AVX2 form gives the scalar form's bits, every length around the vector width.
TEST(ExpSum, Avx2MatchesScalarBitForBit) {
  if (!cpu_features().has_avx2_group()) GTEST_SKIP() << "this CPU lacks AVX2";
  for (size_t n = 1; n <= 70; ++n) {
    const std::vector<float> x = random_logits(n + 49152 * (n == 70), static_cast<uint32_t>(n), 5.0f);
    std::vector<float> w_scalar(x.size()), w_avx2(x.size());
    const auto len = static_cast<int64_t>(x.size());
    const double s = scalar::exp_sum(x.data(), len, 3.0f, 1.3f, w_scalar.data());
    const double v = avx2::exp_sum(x.data(), len, 3.0f, 1.3f, w_avx2.data());
    ASSERT_EQ(std::memcmp(w_scalar.data(), w_avx2.data(), sizeof(float) * x.size()), 0) << n;
    ASSERT_EQ(s, v) << n;
  }
}

}  // namespace
}  // namespace pagoda
