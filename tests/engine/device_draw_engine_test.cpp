// A plain temperature draw taken where the logits are (the backend's draw_rows, its
// uniform drawn when the step is built) gives the tokens the sampler's own draw gave (its
// uniform drawn after the pass): the same seeded requests run once as plain draws and
// once with log-probabilities (which keep them on the sampler), on stories260K, batched,
// preempted for want of KV blocks, and speculating with prompt lookup, must produce the
// same tokens, greedy requests mixed in.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine_test_util.h"
#include "model/model.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;

std::vector<EngineRequest> requests(bool logprobs) {
  std::vector<EngineRequest> out(24);
  for (int i = 0; i < 24; ++i) {
    EngineRequest& r = out[static_cast<size_t>(i)];
    r.prompt = {1};
    for (int k = 0; k < 1 + (i * 37) % 90; ++k) r.prompt.push_back(3 + (i * 7919 + k * 104729) % 500);
    r.stop.max_tokens = 20 + (i * 13) % 40;
    r.stop.ignore_eog = true;
    r.sampling.temperature = i % 7 == 3 ? 0.0f : 0.5f + 0.3f * static_cast<float>(i % 5);
    r.sampling.seed = 500 + static_cast<uint64_t>(i);
    r.sampling.logprobs = logprobs;
  }
  return out;
}

void expect_same_tokens(EngineConfig config, int32_t kv_blocks) {
  BatchedModel m = testing::load_batched_model("stories260K.gguf", config.load_options());
  ASSERT_TRUE(m.model && m.tokenizer);
  if (kv_blocks > 0) {
    config.kv_memory.bytes = model::kv_cache_shape(m.model->config(), 1, config.block_size).block_bytes() *
                             static_cast<size_t>(kv_blocks);
  }
  std::unique_ptr<Engine> on_device = testing::make_engine(m, config);
  ASSERT_NE(on_device, nullptr);
  const std::vector<testing::Received> drawn = testing::run_all(*on_device, requests(false));
  on_device.reset();
  std::unique_ptr<Engine> on_host = testing::make_engine(m, config);
  ASSERT_NE(on_host, nullptr);
  const std::vector<testing::Received> sampled = testing::run_all(*on_host, requests(true));
  ASSERT_EQ(drawn.size(), sampled.size());
  for (size_t i = 0; i < drawn.size(); ++i) {
    EXPECT_EQ(drawn[i].error, "") << "request " << i;
    EXPECT_EQ(drawn[i].tokens, sampled[i].tokens) << "request " << i;
  }
}

EngineConfig base_config() {
  EngineConfig config;
  config.scheduler.max_batched_tokens = 96;
  config.scheduler.max_running = 16;
  config.scheduler.max_model_len = 256;
  return config;
}

TEST(DeviceDrawEngine, BatchedRequestsDrawTheSamplersTokens) { expect_same_tokens(base_config(), 0); }

TEST(DeviceDrawEngine, PreemptedRequestsDrawTheSamplersTokens) { expect_same_tokens(base_config(), 20); }

TEST(DeviceDrawEngine, SpeculatingRequestsDrawTheSamplersTokens) {
  EngineConfig config = base_config();
  config.speculative.method = SpeculativeMethod::kNgram;
  config.speculative.adaptive = false;
  expect_same_tokens(config, 0);
}

}  // namespace
}  // namespace pagoda::engine
