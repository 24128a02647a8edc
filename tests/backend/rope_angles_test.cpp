// Rope keeps the angles of its last call: a call with other positions or parameters
// must still rotate exactly as a Rope that never ran before.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "core/thread_pool.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

constexpr int64_t kHeadDim = 16, kHeads = 3;

struct Call {
  std::vector<int32_t> positions;
  RopeParams params;
};

std::vector<float> rotated(Rope& rope, ThreadPool& pool, const Call& call) {
  const int64_t n_tokens = static_cast<int64_t>(call.positions.size());
  std::vector<float> x = testing::random_values(kHeadDim * kHeads * n_tokens, 7);
  const TensorView v = make_view(x.data(), DType::F32, kHeadDim, kHeads, n_tokens);
  EXPECT_TRUE(rope.run(pool, v, call.positions, call.params).ok());
  return x;
}

TEST(RopeAngles, AReusedRopeRotatesAsAFreshOne) {
  static const float kFactors[] = {1.0f, 2.0f, 4.0f, 8.0f, 1.0f, 1.0f, 3.0f, 1.0f};
  RopeParams base;
  base.n_dims = kHeadDim;
  RopeParams other_base = base;
  other_base.freq_base = 500000.0f;
  RopeParams scaled = base;
  scaled.freq_scale = 0.25f;
  RopeParams factors = base;
  factors.freq_factors = kFactors;
  RopeParams fewer_dims = base;
  fewer_dims.n_dims = 8;
  RopeParams neox = base;
  neox.neox = true;
  // Each call differs from the one before in one thing only.
  const std::vector<Call> calls = {
      {{0, 1, 2, 3}, base}, {{0, 1, 2, 3}, base},       {{0, 1, 2, 4}, base}, {{7}, base},
      {{7, 8}, base},       {{7, 8}, other_base},       {{7, 8}, base},       {{7, 8}, scaled},
      {{7, 8}, base},       {{7, 8}, factors},          {{7, 8}, base},       {{7, 8}, fewer_dims},
      {{7, 8}, base},       {{7, 8}, neox},             {{9000, 3, 12}, neox}, {{9000, 3}, neox},
  };
  ThreadPool pool(2);
  Rope reused(quant::best_isa());
  for (size_t i = 0; i < calls.size(); ++i) {
    Rope fresh(quant::best_isa());
    EXPECT_EQ(rotated(reused, pool, calls[i]), rotated(fresh, pool, calls[i])) << "call " << i;
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu
