// Tokens chosen where the logits are (the backend's sample_rows, the uniform drawn when
// the step is built) are the tokens the sampler itself chose (its uniform drawn after the
// pass): the same seeded requests run once on the device path and once with every token
// on the host (EngineConfig::tokens_on_device off), on stories260K, batched, preempted
// for want of KV blocks, and speculating with prompt lookup, must produce the same
// tokens, and the same log-probabilities where they are asked. The requests mix greedy ones, plain draws, top-k, top-p, min-p, logit bias and
// the three penalties, and a repetition penalty so small that repeated tokens' logits
// overflow to +inf, whose rows the backend leaves to the host's sampler.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/engine_test_util.h"
#include "model/model.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;

std::vector<EngineRequest> requests() {
  std::vector<EngineRequest> out(24);
  for (int i = 0; i < 24; ++i) {
    EngineRequest& r = out[static_cast<size_t>(i)];
    r.prompt = {1};
    for (int k = 0; k < 1 + (i * 37) % 90; ++k) r.prompt.push_back(3 + (i * 7919 + k * 104729) % 500);
    r.stop.max_tokens = 20 + (i * 13) % 40;
    r.stop.ignore_eog = true;
    SamplingParams& p = r.sampling;
    p.temperature = i % 7 == 3 ? 0.0f : 0.5f + 0.3f * static_cast<float>(i % 5);
    p.seed = 500 + static_cast<uint64_t>(i);
    if (i % 4 == 1) p.top_k = 5 + i;
    if (i % 3 == 1) p.top_p = 0.6f + 0.05f * static_cast<float>(i % 6);
    if (i % 5 == 2) p.min_p = 0.05f;
    if (i % 4 == 2) p.logit_bias = {{13, 3.0f}, {300, -INFINITY}, {42, 1.5f}};
    if (i % 3 == 0) p.repetition_penalty = 1.4f, p.repetition_window = i % 2 == 0 ? 8 : -1;
    if (i % 5 == 3) p.presence_penalty = 0.6f, p.frequency_penalty = 0.3f;
    if (i == 10 || i == 17) p.repetition_penalty = 1e-38f, p.repetition_window = -1;
    if (i % 4 == 0) p.logprobs = true, p.top_logprobs = i % 6;
  }
  return out;
}

// Log-probabilities: exactly the host's on the CPU; within a float's rounding on a GPU
// (its normalizer's sum is taken in another order).
bool near(float x, float y) { return x == y || std::fabs(x - y) <= 1e-6f + 1e-6f * std::fabs(y); }

void expect_same_tokens(EngineConfig config, int32_t kv_blocks) {
  BatchedModel m = testing::load_batched_model("stories260K.gguf", config.load_options());
  ASSERT_TRUE(m.model && m.tokenizer);
  if (kv_blocks > 0) {
    config.kv_memory.bytes = model::kv_cache_shape(m.model->config(), 1, config.block_size).block_bytes() *
                             static_cast<size_t>(kv_blocks);
  }
  std::unique_ptr<Engine> on_device = testing::make_engine(m, config);
  ASSERT_NE(on_device, nullptr);
  const std::vector<testing::Received> drawn = testing::run_all(*on_device, requests());
  on_device.reset();
  config.tokens_on_device = false;
  std::unique_ptr<Engine> on_host = testing::make_engine(m, config);
  ASSERT_NE(on_host, nullptr);
  const std::vector<testing::Received> sampled = testing::run_all(*on_host, requests());
  ASSERT_EQ(drawn.size(), sampled.size());
  for (size_t i = 0; i < drawn.size(); ++i) {
    EXPECT_EQ(drawn[i].error, "") << "request " << i;
    EXPECT_EQ(drawn[i].tokens, sampled[i].tokens) << "request " << i;
    ASSERT_FALSE(drawn[i].outputs.empty() || sampled[i].outputs.empty()) << "request " << i;
    // Verification keeps the same proposals either way (speculating: the rows after
    // proposals are chosen on the device too, for requests without penalties).
    EXPECT_EQ(drawn[i].outputs.back().n_proposed_tokens, sampled[i].outputs.back().n_proposed_tokens) << i;
    EXPECT_EQ(drawn[i].outputs.back().n_accepted_tokens, sampled[i].outputs.back().n_accepted_tokens) << i;
    std::vector<TokenLogprobs> a, b;
    for (const RequestOutput& o : drawn[i].outputs) a.insert(a.end(), o.logprobs.begin(), o.logprobs.end());
    for (const RequestOutput& o : sampled[i].outputs) b.insert(b.end(), o.logprobs.begin(), o.logprobs.end());
    ASSERT_EQ(a.size(), b.size()) << "request " << i;
    EXPECT_EQ(a.empty(), i % 4 != 0) << "request " << i;
    for (size_t t = 0; t < a.size(); ++t) {
      EXPECT_TRUE(near(a[t].logprob, b[t].logprob)) << "request " << i << ", token " << t;
      ASSERT_EQ(a[t].top.size(), b[t].top.size()) << "request " << i;
      for (size_t j = 0; j < a[t].top.size(); ++j) {
        EXPECT_EQ(a[t].top[j].token, b[t].top[j].token) << "request " << i << ", token " << t;
        EXPECT_TRUE(near(a[t].top[j].logprob, b[t].top[j].logprob)) << "request " << i << ", token " << t;
      }
    }
  }
}

EngineConfig base_config() {
  EngineConfig config;
  config.scheduler.max_batched_tokens = 96;
  config.scheduler.max_running = 16;
  config.scheduler.max_model_len = 256;
  return config;
}

TEST(DeviceSamplingEngine, BatchedRequestsTakeTheSamplersTokens) { expect_same_tokens(base_config(), 0); }

TEST(DeviceSamplingEngine, PreemptedRequestsTakeTheSamplersTokens) { expect_same_tokens(base_config(), 20); }

TEST(DeviceSamplingEngine, SpeculatingRequestsTakeTheSamplersTokens) {
  EngineConfig config = base_config();
  config.speculative.method = SpeculativeMethod::kNgram;
  config.speculative.adaptive = false;
  expect_same_tokens(config, 0);
}

}  // namespace
}  // namespace pagoda::engine
