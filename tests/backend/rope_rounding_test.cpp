// Rope rounds as the reference build's compiled loop does, in both layouts: the pair
// (x0, x1) becomes (fma(x0, cos, -(x1 sin)), fma(x0, sin, x1 cos)): the x0 products
// fused, the x1 products rounded first. Random pairs at position 1 (angle 1 radian for
// the first pair), where the other fusion of the second output rounds differently for
// some of them.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "core/thread_pool.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

TEST(RopeRounding, BothLayoutsFuseTheX0Products) {
  constexpr int64_t kPairs = 256;  // heads of 2 values, one pair each
  const std::vector<float> original = testing::random_values(2 * kPairs, 61);
  const float c = std::cos(1.0f), s = std::sin(1.0f);
  ThreadPool pool(2);
  for (const bool neox : {false, true}) {
    std::vector<float> x = original;
    TensorView v = make_view(x.data(), DType::F32, 2, kPairs, 1);  // [1 token][kPairs heads][2]
    const int32_t position[] = {1};
    RopeParams params;
    params.n_dims = 2;
    params.neox = neox;
    Rope rope(Isa::kScalar);
    ASSERT_TRUE(rope.run(pool, v, position, params).ok());
    int other_fusion_differs = 0;
    for (int64_t h = 0; h < kPairs; ++h) {
      const float x0 = original[2 * h], x1 = original[2 * h + 1];
      EXPECT_EQ(x[2 * h], std::fma(x0, c, -(x1 * s))) << "pair " << h;
      EXPECT_EQ(x[2 * h + 1], std::fma(x0, s, x1 * c)) << "pair " << h;
      other_fusion_differs += std::fma(x1, c, x0 * s) != std::fma(x0, s, x1 * c);
    }
    EXPECT_GT(other_fusion_differs, 0) << "the inputs do not tell the fusions apart";
  }
}

// The vector rotation gives the scalar loop's bits, in both layouts, for rotated parts
// that fill whole vectors and parts that leave a tail of pairs to the scalar loop.
TEST(RopeRounding, EveryIsaRotatesAsTheScalarLoop) {
  constexpr int64_t kHeadDim = 128, kHeads = 4;
  const std::vector<int32_t> positions = {0, 1, 17, 4095};
  const std::vector<float> original =
      testing::random_values(static_cast<size_t>(kHeadDim * kHeads) * positions.size(), 62, 4.0f);
  ThreadPool pool(2);
  for (const int32_t n_dims : {128, 100, 64, 18, 6}) {
    for (const bool neox : {false, true}) {
      RopeParams params;
      params.n_dims = n_dims;
      params.neox = neox;
      std::vector<float> expected = original;
      Rope scalar(Isa::kScalar);
      ASSERT_TRUE(scalar.run(pool, make_view(expected.data(), DType::F32, kHeadDim, kHeads, 4), positions, params).ok());
      ASSERT_NE(expected, original);
      for (const Isa isa : quant::available_isas()) {
        std::vector<float> x = original;
        Rope rope(isa);
        ASSERT_TRUE(rope.run(pool, make_view(x.data(), DType::F32, kHeadDim, kHeads, 4), positions, params).ok());
        EXPECT_EQ(x, expected) << isa_name(isa) << ", n_dims " << n_dims << (neox ? ", neox" : "");
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu
