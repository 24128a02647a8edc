// The activation quantizers Q8_0, Q8_1 and Q8_K: exact bytes on hand-made inputs whose
// scales are exact (1, 0.5, ...), so every rounding decision is visible: Q8_0 / Q8_1
// round halves away from zero, Q8_K to even; Q8_K keeps the sign of its largest value.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace pagoda::quant {
namespace {

constexpr uint16_t kHalfOne = 0x3c00;
constexpr uint16_t kHalfHalf = 0x3800;

// A 32-value block: `head` first, zeros after.
std::vector<float> block_of(std::initializer_list<float> head, size_t size = kQK) {
  std::vector<float> x(head);
  x.resize(size, 0.0f);
  return x;
}

std::vector<int> quants(const int8_t* qs, size_t count) { return std::vector<int>(qs, qs + count); }

std::vector<int> padded(std::initializer_list<int> head, size_t size) {
  std::vector<int> v(head);
  v.resize(size, 0);
  return v;
}

TEST(QuantizeQ8_0, UnitScaleRoundsHalvesAwayFromZero) {
  // amax 127 gives d = 1 exactly, so each quant is round(x).
  const std::vector<float> x = block_of({127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -1.5f, 0.49999997f, 126.5f, -126.5f, -0.0f});
  BlockQ8_0 y;
  quantize_row_q8_0(x.data(), &y, kQK);
  EXPECT_EQ(y.d, kHalfOne);
  EXPECT_EQ(quants(y.qs, kQK), padded({127, 3, -3, 1, -1, 2, -2, 0, 127, -127, 0}, kQK));
}

TEST(QuantizeActivationsQ8_0, UnitScaleRoundsHalvesToEven) {
  // The activation quantizer scales by 127 / amax (1 here) and rounds ties to even.
  const std::vector<float> x = block_of({127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -1.5f, 0.49999997f, 126.5f, -126.5f, -0.0f});
  BlockQ8_0 y;
  quantize_activations_q8_0(x.data(), &y, kQK);
  EXPECT_EQ(y.d, kHalfOne);
  EXPECT_EQ(quants(y.qs, kQK), padded({127, 2, -2, 0, 0, 2, -2, 0, 126, -126, 0}, kQK));
}

TEST(QuantizeActivationsQ8_0, ScalesByInverseOfAmaxNotOfD) {
  // amax 2.59: the reference multiplies x by 1 / (amax / 127), giving 28.5000019 -> 29;
  // the activation path multiplies by 127 / amax, giving 28.4999981 -> 28.
  const std::vector<float> x = block_of({2.59000015f, 0.581220508f, -0.581220508f});
  BlockQ8_0 act;
  BlockQ8_0 ref;
  quantize_activations_q8_0(x.data(), &act, kQK);
  quantize_row_q8_0(x.data(), &ref, kQK);
  EXPECT_EQ(act.d, ref.d);
  EXPECT_EQ(quants(act.qs, 3), (std::vector<int>{127, 28, -28}));
  EXPECT_EQ(quants(ref.qs, 3), (std::vector<int>{127, 29, -29}));
}

TEST(QuantizeActivationsQ8_1, SumMatchesQuants) {
  const std::vector<float> x = block_of({127.0f, 2.5f, 1.5f, -0.5f});
  BlockQ8_1 y;
  quantize_activations_q8_1(x.data(), &y, kQK);
  EXPECT_EQ(quants(y.qs, kQK), padded({127, 2, 2, 0}, kQK));
  EXPECT_EQ(fp16_to_f32(y.s), 131.0f);
}

TEST(QuantizeQ8_0, NegativeMaximumAndHalfScale) {
  // amax 63.5 (a negative value) gives d = 0.5: quants are round(2x).
  const std::vector<float> x = block_of({1.25f, -1.25f, 0.75f, 0.1f, 0.0f, -63.5f, 63.0f, -0.25f});
  BlockQ8_0 y;
  quantize_row_q8_0(x.data(), &y, kQK);
  EXPECT_EQ(y.d, kHalfHalf);
  EXPECT_EQ(quants(y.qs, kQK), padded({3, -3, 2, 0, 0, -127, 126, -1}, kQK));
}

TEST(QuantizeQ8_0, ZeroBlockHasZeroScaleAndQuants) {
  const std::vector<float> x(kQK, 0.0f);
  BlockQ8_0 y;
  std::memset(&y, 0xff, sizeof(y));
  quantize_row_q8_0(x.data(), &y, kQK);
  EXPECT_EQ(y.d, 0);
  EXPECT_EQ(quants(y.qs, kQK), std::vector<int>(kQK, 0));
}

TEST(QuantizeQ8_0, BlocksAreIndependentAndScaleRoundsToHalf) {
  std::vector<float> x = block_of({-127.0f, 64.0f});
  const std::vector<float> ones(kQK, 1.0f);
  x.insert(x.end(), ones.begin(), ones.end());
  BlockQ8_0 y[2];
  quantize_row_q8_0(x.data(), y, 2 * kQK);
  EXPECT_EQ(y[0].d, kHalfOne);
  EXPECT_EQ(quants(y[0].qs, kQK), padded({-127, 64}, kQK));
  // d = 1/127 is stored as the nearest half, 0x2008 (0.0078811...); the quants use the
  // exact float d, so they are 127.
  EXPECT_EQ(y[1].d, 0x2008);
  EXPECT_EQ(quants(y[1].qs, kQK), std::vector<int>(kQK, 127));
}

TEST(QuantizeQ8_0, NonFiniteValuesStayInTheirBlock) {
  // An infinity makes d infinite and every quant 0 (x / inf, and inf / inf taken as 0);
  // a NaN quantizes to 0 beside ordinary values. Neighbouring blocks are untouched.
  std::vector<float> x(3 * kQK, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  x[kQK] = std::numeric_limits<float>::quiet_NaN();
  x[kQK + 1] = 127.0f;
  BlockQ8_0 y[3];
  quantize_row_q8_0(x.data(), y, 3 * kQK);
  EXPECT_EQ(y[0].d, 0x7c00);
  EXPECT_EQ(quants(y[0].qs, kQK), std::vector<int>(kQK, 0));
  EXPECT_EQ(y[1].d, kHalfOne);
  EXPECT_EQ(y[1].qs[0], 0);
  EXPECT_EQ(y[1].qs[1], 127);
  EXPECT_EQ(y[1].qs[2], 1);
  EXPECT_EQ(y[2].d, 0x2008);
  EXPECT_EQ(quants(y[2].qs, kQK), std::vector<int>(kQK, 127));
}

TEST(QuantizeQ8_1, SumOfQuantsTimesScaleAsHalf) {
  const std::vector<float> x = block_of({127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -1.5f, 0.49999997f, 126.5f, -126.5f});
  BlockQ8_1 y;
  quantize_row_q8_1(x.data(), &y, kQK);
  EXPECT_EQ(y.d, kHalfOne);
  EXPECT_EQ(quants(y.qs, kQK), padded({127, 3, -3, 1, -1, 2, -2, 0, 127, -127}, kQK));
  EXPECT_EQ(y.s, 0x57f0);  // 127 * 1.0
}

TEST(QuantizeQ8_1, HalfScaleSum) {
  // d = 0.5 again; the quants 3, -3, 2, 0, 0, -127, 126, -1 sum to 0, and a last value
  // of 50 adds a quant of 100.
  std::vector<float> x = block_of({1.25f, -1.25f, 0.75f, 0.1f, 0.0f, -63.5f, 63.0f, -0.25f});
  x[31] = 50.0f;  // quant 100
  BlockQ8_1 y;
  quantize_row_q8_1(x.data(), &y, kQK);
  EXPECT_EQ(y.d, kHalfHalf);
  std::vector<int> expected = padded({3, -3, 2, 0, 0, -127, 126, -1}, kQK);
  expected[31] = 100;
  EXPECT_EQ(quants(y.qs, kQK), expected);
  EXPECT_EQ(y.s, f32_to_fp16(100.0f * 0.5f));  // sum 100, times d
  EXPECT_EQ(y.s, 0x5240);                      // 50.0
}

TEST(QuantizeQ8_1, ZeroBlock) {
  const std::vector<float> x(kQK, 0.0f);
  BlockQ8_1 y;
  quantize_row_q8_1(x.data(), &y, kQK);
  EXPECT_EQ(y.d, 0);
  EXPECT_EQ(y.s, 0);
  EXPECT_EQ(quants(y.qs, kQK), std::vector<int>(kQK, 0));
}

std::vector<int> bsums(const BlockQ8_K& y) { return std::vector<int>(y.bsums, y.bsums + kQK_K / 16); }

TEST(QuantizeQ8_K, NegativeMaximumGivesUnitScaleAndRoundsHalvesToEven) {
  // max = -127: iscale = -127 / max = 1, so quants are round-half-even(x) and d = 1.
  std::vector<float> x = block_of({-127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, 3.5f, 126.5f, -126.5f, 0.49999997f},
                                  kQK_K);
  x[16] = 5.0f;   // second group
  x[255] = -7.0f;  // last group
  BlockQ8_K y;
  quantize_row_q8_K(x.data(), &y, kQK_K);
  EXPECT_EQ(y.d, 1.0f);
  std::vector<int> expected = padded({-127, 2, -2, 0, 0, 2, 4, 126, -126, 0}, kQK_K);
  expected[16] = 5;
  expected[255] = -7;
  EXPECT_EQ(quants(y.qs, kQK_K), expected);
  std::vector<int> expected_sums(16, 0);
  expected_sums[0] = -127 + 2 - 2 + 0 + 0 + 2 + 4 + 126 - 126;  // -121
  expected_sums[1] = 5;
  expected_sums[15] = -7;
  EXPECT_EQ(bsums(y), expected_sums);
}

TEST(QuantizeQ8_K, PositiveMaximumFlipsSignsAndFirstOfEqualMagnitudesWins) {
  // max = +127 (first of the two values of magnitude 127): iscale = -1, d = -1, every
  // quant is the negated input, so -127 becomes +127.
  const std::vector<float> x = block_of({2.5f, 127.0f, -127.0f, -3.5f, 1.0f}, kQK_K);
  BlockQ8_K y;
  quantize_row_q8_K(x.data(), &y, kQK_K);
  EXPECT_EQ(y.d, -1.0f);
  EXPECT_EQ(quants(y.qs, kQK_K), padded({-2, -127, 127, 4, -1}, kQK_K));
  std::vector<int> expected_sums(16, 0);
  expected_sums[0] = -2 - 127 + 127 + 4 - 1;
  EXPECT_EQ(bsums(y), expected_sums);
}

TEST(QuantizeQ8_K, FractionalScale) {
  // max = -2: iscale = 63.5 and d = 1 / 63.5. 1.0 -> 63.5, a tie, goes to 64 (even).
  const std::vector<float> x = block_of({-2.0f, 1.0f, 0.25f, -1.5f, 0.5f, 2.0f}, kQK_K);
  BlockQ8_K y;
  quantize_row_q8_K(x.data(), &y, kQK_K);
  EXPECT_EQ(y.d, 1.0f / 63.5f);
  EXPECT_EQ(quants(y.qs, kQK_K), padded({-127, 64, 16, -95, 32, 127}, kQK_K));
}

TEST(QuantizeQ8_K, ZeroBlockZeroesEverything) {
  const std::vector<float> x(kQK_K, 0.0f);
  BlockQ8_K y;
  std::memset(&y, 0x5a, sizeof(y));
  quantize_row_q8_K(x.data(), &y, kQK_K);
  EXPECT_EQ(y.d, 0.0f);
  EXPECT_EQ(quants(y.qs, kQK_K), std::vector<int>(kQK_K, 0));
  EXPECT_EQ(bsums(y), std::vector<int>(16, 0));
}

TEST(QuantizeQ8_K, SuperBlocksAreIndependent) {
  std::vector<float> x(2 * kQK_K, 0.0f);
  x[0] = -127.0f;
  x[kQK_K] = 2.0f;  // max = +2: iscale = -63.5
  x[kQK_K + 1] = 1.0f;
  BlockQ8_K y[2];
  quantize_row_q8_K(x.data(), y, 2 * kQK_K);
  EXPECT_EQ(y[0].d, 1.0f);
  EXPECT_EQ(y[0].qs[0], -127);
  EXPECT_EQ(y[1].d, 1.0f / -63.5f);
  EXPECT_EQ(y[1].qs[0], -127);
  EXPECT_EQ(y[1].qs[1], -64);  // -63.5 ties to even
  EXPECT_EQ(y[1].bsums[0], -191);
}

TEST(QuantizeQ8, QuantsNeverReachMinus128) {
  // The dot kernels' sign tricks rely on it: |q| <= 127 for any finite input.
  std::vector<float> x(kQK_K);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * (i % 2 ? -1e-3f : 3e5f) - 1.0f;
  BlockQ8_K k;
  quantize_row_q8_K(x.data(), &k, kQK_K);
  std::array<BlockQ8_0, kQK_K / kQK> b0;
  quantize_row_q8_0(x.data(), b0.data(), kQK_K);
  for (int8_t q : k.qs) EXPECT_GE(q, -127);
  for (const BlockQ8_0& b : b0)
    for (int8_t q : b.qs) EXPECT_GE(q, -127);
}

}  // namespace
}  // namespace pagoda::quant
