// Continuous batching changes nothing a request computes: 32 requests with different
// prompts, lengths and sampling (greedy and seeded temperature sampling) run together
// give, token for token, what each gives alone on an engine of the same configuration;
// also when the KV cache is so small that requests are preempted and recomputed, and
// when they share a long prompt prefix that is then computed once.
//
// This needs the CPU backend to be batch-invariant: a token's logits must not depend on
// the other tokens of its batch. Equality is exact on purpose.

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine_test_util.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;
using testing::make_engine;
using testing::Received;
using testing::run_all;

constexpr int32_t kRequests = 32;
constexpr int32_t kMaxModelLen = 256;

EngineConfig config_with_blocks(const model::ModelConfig& model, int32_t n_blocks) {
  EngineConfig config;
  config.scheduler = {.max_batched_tokens = 96, .max_running = 16, .max_model_len = kMaxModelLen};
  config.kv_memory.bytes = model::kv_cache_shape(model, 1, config.block_size).block_bytes() *
                           static_cast<uint64_t>(n_blocks);
  return config;
}

// Request i: BOS and pseudo-random ordinary tokens (ids 3..511: no BOS/EOS), 1 to 120 of
// them, after `prefix` when given; every third greedy, the others sampled at various
// temperatures with their own seeds; 4 to 63 new tokens; some with a stop string.
std::vector<EngineRequest> mixed_requests(const std::vector<int32_t>& prefix = {}) {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int32_t> token(3, 511);
  std::vector<EngineRequest> requests(kRequests);
  for (int32_t i = 0; i < kRequests; ++i) {
    EngineRequest& r = requests[static_cast<size_t>(i)];
    r.prompt = prefix.empty() ? std::vector<int32_t>{1} : prefix;
    const int32_t n_random = prefix.empty() ? 1 + (i * 37) % 120 : 1 + (i * 7) % 24;
    for (int32_t k = 0; k < n_random; ++k) r.prompt.push_back(token(rng));
    r.stop.max_tokens = 4 + (i * 13) % 60;
    if (i % 5 == 4) r.stop.stop_strings = {"."};
    if (i % 3 == 0) {
      r.sampling.temperature = 0.0f;
    } else {
      r.sampling.temperature = 0.6f + 0.1f * static_cast<float>(i % 5);
      r.sampling.top_k = i % 2 == 0 ? 40 : 0;
      r.sampling.top_p = i % 4 == 1 ? 0.9f : 1.0f;
      r.sampling.seed = 1000 + static_cast<uint64_t>(i);
    }
  }
  return requests;
}

class EngineEquivalence : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig config;
    config.scheduler.max_batched_tokens = 96;
    config.scheduler.max_running = 16;
    m_ = testing::load_batched_model("stories260K.gguf", config.load_options());
    ASSERT_TRUE(m_.model && m_.tokenizer);
  }

  // Each request alone, on a fresh engine of the same configuration.
  void expect_same_as_alone(const EngineConfig& config, const std::vector<EngineRequest>& requests,
                            const std::vector<Received>& together) {
    ASSERT_EQ(together.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      std::unique_ptr<Engine> engine = make_engine(m_, config);
      ASSERT_TRUE(engine);
      const std::vector<Received> alone = run_all(*engine, {requests[i]});
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(together[i].tokens, alone[0].tokens) << "request " << i;
      EXPECT_EQ(together[i].text, alone[0].text) << "request " << i;
      EXPECT_EQ(together[i].finish, alone[0].finish) << "request " << i;
    }
  }

  static int64_t n_generated(const std::vector<Received>& results) {
    int64_t n = 0;
    for (const Received& r : results) {
      EXPECT_TRUE(r.finish == FinishReason::kStop || r.finish == FinishReason::kLength) << r.error;
      EXPECT_FALSE(r.tokens.empty());
      n += static_cast<int64_t>(r.tokens.size());
    }
    return n;
  }

  BatchedModel m_;
};

TEST_F(EngineEquivalence, RequestsRunTogetherGiveWhatEachGivesAlone) {
  const EngineConfig config = config_with_blocks(m_.model->config(), 256);
  const std::vector<EngineRequest> requests = mixed_requests();
  std::unique_ptr<Engine> engine = make_engine(m_, config);
  ASSERT_TRUE(engine);
  const std::vector<Received> together = run_all(*engine, requests);
  const EngineStats stats = engine->stats();
  // They did run together: far fewer steps than tokens generated.
  EXPECT_LT(stats.n_steps * 4, n_generated(together));
  EXPECT_GT(stats.n_decode_steps, 0);
  EXPECT_LT(stats.n_decode_steps, stats.n_steps);  // the first steps prefill
  EXPECT_EQ(stats.scheduler.n_preemptions, 0);
  EXPECT_EQ(stats.kv_usage, 0.0);
  expect_same_as_alone(config, requests, together);
}

TEST_F(EngineEquivalence, PreemptedRequestsGiveWhatTheyGiveAlone) {
  // 20 blocks: one request of max_model_len tokens fits (16), sixteen at once do not.
  const EngineConfig config = config_with_blocks(m_.model->config(), 20);
  const std::vector<EngineRequest> requests = mixed_requests();
  std::unique_ptr<Engine> engine = make_engine(m_, config);
  ASSERT_TRUE(engine);
  const std::vector<Received> together = run_all(*engine, requests);
  n_generated(together);
  EXPECT_GT(engine->stats().scheduler.n_preemptions, 0);
  EXPECT_EQ(engine->stats().kv_usage, 0.0);
  expect_same_as_alone(config, requests, together);
}

// The first request computes the 96-token prefix (6 blocks); the 31 added once it has
// its first token find the prefix cached and prefill only their own suffixes.
TEST_F(EngineEquivalence, ASharedPrefixIsComputedOnce) {
  const EngineConfig config = config_with_blocks(m_.model->config(), 256);
  std::vector<int32_t> prefix = {1};
  for (int32_t i = 1; i < 96; ++i) prefix.push_back(3 + (i * 101) % 509);
  const std::vector<EngineRequest> requests = mixed_requests(prefix);
  std::unique_ptr<Engine> engine = make_engine(m_, config);
  ASSERT_TRUE(engine);

  auto sink = std::make_shared<testing::RecordingSink>();
  std::vector<RequestId> ids;
  for (size_t i = 0; i < requests.size(); ++i) {
    Expected<std::vector<RequestId>> added = engine->add(requests[i], sink);
    ASSERT_TRUE(added.ok()) << added.status().message();
    ids.push_back(added->front());
    if (i == 0) {
      ASSERT_TRUE(sink->wait_outputs(ids[0], 1));
    }
  }
  ASSERT_TRUE(sink->wait_finished(ids));
  std::vector<Received> together;
  for (const RequestId id : ids) together.push_back(sink->get(id));
  n_generated(together);

  int64_t suffixes = 0;
  for (const EngineRequest& r : requests) suffixes += static_cast<int64_t>(r.prompt.size()) - 96;
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.scheduler.n_preemptions, 0);
  EXPECT_EQ(stats.scheduler.n_prefilled_tokens, 96 + suffixes);
  EXPECT_EQ(stats.prefix_cache.hit_tokens, 31 * 96);
  for (size_t i = 1; i < together.size(); ++i) {
    EXPECT_EQ(together[i].outputs.front().n_cached_prompt_tokens, 96) << "request " << i;
  }
  expect_same_as_alone(config, requests, together);
}

// The default model (SmolLM2-135M, Q4_1, vocabulary of 49152), fewer requests: four
// prompts of different lengths, two greedy and two sampled, run together and alone.
TEST(EngineEquivalenceSmolLM2, RequestsRunTogetherGiveWhatEachGivesAlone) {
  const std::string path =
      std::string(PAGODA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  PAGODA_SKIP_IF_MISSING(path);
  EngineConfig config;
  config.scheduler = {.max_batched_tokens = 64, .max_running = 4, .max_model_len = 256};
  config.kv_memory.bytes = 64u << 20;
  BatchedModel m = testing::load_batched_model_file(path, config.load_options());
  ASSERT_TRUE(m.model && m.tokenizer);
  std::vector<EngineRequest> requests(4);
  for (size_t i = 0; i < requests.size(); ++i) {
    EngineRequest& r = requests[i];
    for (size_t k = 0; k < 10 + 17 * i; ++k)
      r.prompt.push_back(static_cast<int32_t>(100 + (i * 7919 + k * 104729) % 40000));
    r.stop.max_tokens = 6;
    r.stop.ignore_eog = true;
    r.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    r.sampling.seed = 7 + i;
  }
  std::unique_ptr<Engine> engine = make_engine(m, config);
  ASSERT_TRUE(engine);
  const std::vector<Received> together = run_all(*engine, requests);
  ASSERT_EQ(together.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(together[i].tokens.size(), 6u);
    std::unique_ptr<Engine> alone_engine = make_engine(m, config);
    ASSERT_TRUE(alone_engine);
    const Received alone = run_all(*alone_engine, {requests[i]}).front();
    EXPECT_EQ(together[i].tokens, alone.tokens) << "request " << i;
    EXPECT_EQ(together[i].text, alone.text) << "request " << i;
  }
}

}  // namespace
}  // namespace pagoda::engine
