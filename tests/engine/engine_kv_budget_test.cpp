// The KV cache's size from a memory budget, and the engine config's resolution against
// a model.

#include <gtest/gtest.h>

#include "engine/engine_config.h"
#include "engine/kv_budget.h"

namespace pagoda::engine {
namespace {

KvMemoryBudget exactly(uint64_t bytes) {
  KvMemoryBudget budget;
  budget.bytes = bytes;
  return budget;
}

KvMemoryBudget share_of_free_memory(double share) {
  KvMemoryBudget budget;
  budget.free_memory_share = share;
  return budget;
}

const KvBlockLimits kLimits{
    .block_bytes = 1000, .min_blocks = 4, .useful_blocks = 40, .max_blocks = 1000};

TEST(EngineKvBudget, AnExactBudgetBuysWholeBlocksEvenBeyondTheUsefulCap) {
  Expected<KvBlockPlan> plan = plan_kv_blocks(exactly(12'999), kLimits, std::nullopt);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->n_blocks, 12);
  EXPECT_EQ(plan->bytes, 12'000u);
  Expected<KvBlockPlan> large = plan_kv_blocks(exactly(123'456), kLimits, std::nullopt);
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(large->n_blocks, 123);
  Expected<KvBlockPlan> huge = plan_kv_blocks(exactly(10'000'000), kLimits, std::nullopt);
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->n_blocks, 1000);  // what block ids can address
}

TEST(EngineKvBudget, AShareOfFreeMemoryIsCappedAtWhatRequestsCanUse) {
  Expected<KvBlockPlan> plan = plan_kv_blocks(share_of_free_memory(0.5), kLimits, 20'000);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->n_blocks, 10);
  EXPECT_EQ(plan->description, "50% of 20000 bytes available");
  Expected<KvBlockPlan> capped = plan_kv_blocks(share_of_free_memory(0.9), kLimits, 1'000'000);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->n_blocks, 40);
}

TEST(EngineKvBudget, RefusesBudgetsTooSmallForOneFullRequest) {
  Expected<KvBlockPlan> plan = plan_kv_blocks(exactly(3'999), kLimits, std::nullopt);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(plan.status().message(),
            "kv cache: a budget of 3999 bytes as configured buys 3 blocks; one request of "
            "max_model_len tokens needs 4 (4000 bytes): give more memory or a smaller "
            "max_model_len");
  EXPECT_FALSE(plan_kv_blocks(share_of_free_memory(0.0), kLimits, 1'000'000).ok());
  EXPECT_FALSE(plan_kv_blocks(share_of_free_memory(1.5), kLimits, 1'000'000).ok());
  EXPECT_FALSE(plan_kv_blocks(share_of_free_memory(0.5), kLimits, std::nullopt).ok());
  EXPECT_FALSE(plan_kv_blocks(exactly(10'000), KvBlockLimits{}, std::nullopt).ok());
}

model::ModelConfig model_of_context(int32_t n_ctx_train) {
  model::ModelConfig config;
  config.n_ctx_train = n_ctx_train;
  return config;
}

TEST(EngineConfigTest, ResolvesMaxModelLenAndBlockCounts) {
  EngineConfig config;
  config.scheduler.max_running = 8;
  Expected<EngineConfig> resolved = config.resolve(model_of_context(1000));
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(resolved->scheduler.max_model_len, 1000);
  EXPECT_EQ(resolved->blocks_per_request(), 63);  // ceil(1000 / 16)
  EXPECT_EQ(resolved->useful_blocks(), 8 * 63);
  EXPECT_EQ(resolved->load_options().max_batch_tokens, 512);
  EXPECT_EQ(resolved->load_options().max_logit_rows, 8);
}

TEST(EngineConfigTest, RefusesOutOfRangeValues) {
  auto refused = [](auto change) {
    EngineConfig config;
    change(config);
    return !config.resolve(model_of_context(1000)).ok();
  };
  EXPECT_TRUE(refused([](EngineConfig& c) { c.scheduler.max_model_len = 1001; }));
  EXPECT_TRUE(refused([](EngineConfig& c) { c.scheduler.max_model_len = 1; }));
  EXPECT_TRUE(refused([](EngineConfig& c) { c.scheduler.max_batched_tokens = 0; }));
  EXPECT_TRUE(refused([](EngineConfig& c) { c.scheduler.max_running = 0; }));
  EXPECT_TRUE(refused([](EngineConfig& c) { c.block_size = 0; }));
  EXPECT_TRUE(refused([](EngineConfig& c) { c.kv_type = DType::Q4_0; }));
  EXPECT_FALSE(refused([](EngineConfig& c) { c.kv_type = DType::Q8_0; }));
}

TEST(EngineConfigTest, ParsesKvCacheTypes) {
  EXPECT_EQ(*parse_kv_cache_type("f16"), DType::F16);
  EXPECT_EQ(*parse_kv_cache_type("f32"), DType::F32);
  EXPECT_EQ(*parse_kv_cache_type("q8_0"), DType::Q8_0);
  EXPECT_FALSE(parse_kv_cache_type("q4_0").ok());
}

}  // namespace
}  // namespace pagoda::engine
