// The engine on the GPU allocates device memory once: weights at load, the KV cache and
// scratch when the engine starts, nothing per request or per step (DESIGN.md invariant
// 1), counted across a serving run with preemption, prefix hits and `n` completions.
// An automatic KV budget takes what the memory-utilization bound leaves.

#include <gtest/gtest.h>

#include <random>

#include "engine/engine_test_util.h"
#include "gpu/gpu_test_util.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;

BatchedModel load_stories_on_gpu(const EngineConfig& config) {
  BatchedModel m;
  Expected<gguf::Reader> reader = gguf::Reader::open(testing::model_path("stories260K.gguf"));
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return m;
  m.file = std::make_unique<gguf::Reader>(std::move(reader).value());
  m.backend = gpu_testing::make_cuda();
  if (!m.backend) return m;
  Expected<std::unique_ptr<model::Model>> model =
      model::load_model(*m.file, *m.backend, config.load_options());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (model.ok()) m.model = std::move(model).value();
  Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(*m.file);
  EXPECT_TRUE(tokenizer.ok());
  if (tokenizer.ok()) m.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tokenizer).value());
  return m;
}

std::vector<EngineRequest> requests_with_shared_prefix(int n) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> token(3, 511);
  std::vector<int32_t> prefix = {1};
  for (int i = 0; i < 40; ++i) prefix.push_back(token(rng));
  std::vector<EngineRequest> requests(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    EngineRequest& r = requests[static_cast<size_t>(i)];
    r.prompt = i % 2 == 0 ? prefix : std::vector<int32_t>{1};
    for (int k = 0; k < 5 + (i * 13) % 90; ++k) r.prompt.push_back(token(rng));
    r.stop.max_tokens = 8 + (i * 7) % 50;
    r.sampling.temperature = i % 3 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 100 + static_cast<uint64_t>(i);
    r.n = i % 5 == 0 ? 2 : 1;
  }
  return requests;
}

TEST(GpuEngineMemory, AServingRunAllocatesNothingAfterStart) {
  PAGODA_SKIP_WITHOUT_GPU();
  EngineConfig config;
  config.scheduler = {.max_batched_tokens = 128, .max_running = 16, .max_model_len = 256};
  // 24 blocks: one request of max_model_len fits (16), sixteen at once do not: preemption.
  BatchedModel m = load_stories_on_gpu(config);
  ASSERT_TRUE(m.model && m.tokenizer);
  config.kv_memory.bytes = model::kv_cache_shape(m.model->config(), 1, config.block_size).block_bytes() * 24;
  std::unique_ptr<Engine> engine = testing::make_engine(m, config);
  ASSERT_TRUE(engine);
  const int64_t before = backend::cuda_allocation_count();
  const std::vector<testing::Received> results = testing::run_all(*engine, requests_with_shared_prefix(40));
  for (const testing::Received& r : results) {
    EXPECT_TRUE(r.finish == FinishReason::kStop || r.finish == FinishReason::kLength) << r.error;
  }
  const EngineStats stats = engine->stats();
  EXPECT_GT(stats.scheduler.n_preemptions, 0);
  EXPECT_GT(stats.prefix_cache.hit_tokens, 0);
  EXPECT_EQ(backend::cuda_allocation_count(), before);
}

TEST(GpuEngineMemory, AnAutomaticKvBudgetTakesWhatTheUtilizationBoundLeaves) {
  PAGODA_SKIP_WITHOUT_GPU();
  EngineConfig config;
  config.scheduler = {.max_batched_tokens = 64, .max_running = 4096, .max_model_len = 512};
  BatchedModel m = load_stories_on_gpu(config);
  ASSERT_TRUE(m.model && m.tokenizer);
  const std::optional<backend::Backend::CacheMemory> left = m.backend->cache_memory();
  ASSERT_TRUE(left.has_value());
  EXPECT_GT(left->bytes, 0u);
  std::unique_ptr<Engine> engine = testing::make_engine(m, config);
  ASSERT_TRUE(engine);
  // The cache takes the bound's leftover, capped at what max_running requests can use.
  const size_t block_bytes = model::kv_cache_shape(m.model->config(), 1, config.block_size).block_bytes();
  const uint64_t useful = uint64_t{4096} * (512 / 16) * block_bytes;
  const uint64_t expected_blocks = std::min<uint64_t>(left->bytes, useful) / block_bytes;
  EXPECT_EQ(static_cast<uint64_t>(engine->kv_shape().n_blocks), expected_blocks);
}

}  // namespace
}  // namespace pagoda::engine
