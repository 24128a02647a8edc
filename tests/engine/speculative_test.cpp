// Speculative decoding by prompt lookup changes nothing a request gets: the same tokens,
// text, finish and log-probabilities as decoding one token at a time, for greedy and for
// seeded sampling (each row is drawn as it would be without speculation, and a proposal
// is kept only when the draw lands on it), alone, batched, preempted and with stop
// strings; and every KV block is free again afterwards.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/ngram_proposer.h"
#include "engine_test_util.h"
#include "speculative_test_util.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;
using testing::make_engine;
using testing::Received;
using testing::run_all;
using testing::config_with_blocks;
using testing::expect_same;
using testing::kMaxModelLen;
using testing::story_requests;

TEST(NgramProposer, ContinuesTheLatestOccurrenceOfTheLongestSuffix) {
  const NgramProposer proposer(2, 4);
  std::vector<int32_t> out;
  // "... 5 6 7 | 8 9" earlier; the text ends with "5 6 7": propose 8 9 (then 5 6 ...).
  proposer.propose(std::vector<int32_t>{1, 5, 6, 7, 8, 9, 2, 5, 6, 7}, 3, out);
  EXPECT_EQ(out, (std::vector<int32_t>{8, 9, 2}));
  // Two occurrences of the 2-gram "3 4": the latest one (followed by 7) wins.
  proposer.propose(std::vector<int32_t>{3, 4, 6, 3, 4, 7, 0, 3, 4}, 2, out);
  EXPECT_EQ(out, (std::vector<int32_t>{7, 0}));
  // A longer match beats a later shorter one: "1 3 4" occurred once, followed by 6.
  proposer.propose(std::vector<int32_t>{1, 3, 4, 6, 2, 3, 4, 7, 1, 3, 4}, 1, out);
  EXPECT_EQ(out, (std::vector<int32_t>{6}));
  // The continuation stops where the tokens end.
  proposer.propose(std::vector<int32_t>{8, 8, 8}, 5, out);
  EXPECT_EQ(out, (std::vector<int32_t>{8}));
  // Nothing shorter than min_n counts: "9" alone repeats, no 2-gram does.
  proposer.propose(std::vector<int32_t>{9, 1, 2, 9}, 3, out);
  EXPECT_TRUE(out.empty());
  proposer.propose(std::vector<int32_t>{4}, 3, out);
  EXPECT_TRUE(out.empty());
  proposer.propose(std::vector<int32_t>{1, 2, 1, 2}, 0, out);
  EXPECT_TRUE(out.empty());
}

class SpeculativeStories : public ::testing::Test {
 protected:
  void SetUp() override {
    const EngineConfig config = config_with_blocks(model::ModelConfig{}, 1, SpeculativeMethod::kNgram);
    m_ = testing::load_batched_model("stories260K.gguf", config.load_options());
    ASSERT_TRUE(m_.model && m_.tokenizer);
  }

  std::vector<Received> run(const EngineConfig& config, const std::vector<EngineRequest>& requests,
                            EngineStats* stats = nullptr) {
    std::unique_ptr<Engine> engine = make_engine(m_, config);
    EXPECT_TRUE(engine);
    if (!engine) return {};
    std::vector<Received> received = run_all(*engine, requests);
    const EngineStats final_stats = engine->stats();
    EXPECT_EQ(final_stats.kv_usage, 0.0);
    EXPECT_EQ(final_stats.n_free_kv_blocks, final_stats.n_kv_blocks);
    if (stats != nullptr) *stats = final_stats;
    return received;
  }

  BatchedModel m_;
};

TEST_F(SpeculativeStories, EachRequestAloneGetsWhatDecodingOneTokenAtATimeGives) {
  const std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  int64_t proposed = 0, accepted = 0;
  for (const EngineRequest& request : requests) {
    const std::vector<Received> plain =
        run(config_with_blocks(m_.model->config(), 64, SpeculativeMethod::kNone), {request});
    EngineStats stats;
    const std::vector<Received> speculated =
        run(config_with_blocks(m_.model->config(), 64, SpeculativeMethod::kNgram), {request}, &stats);
    expect_same(plain, speculated);
    proposed += stats.scheduler.n_draft_tokens;
    accepted += stats.scheduler.n_accepted_draft_tokens;
    // A request that verified proposals needed fewer steps than tokens.
    if (stats.scheduler.n_accepted_draft_tokens > 0) {
      EXPECT_LT(stats.n_steps, static_cast<int64_t>(speculated[0].tokens.size()));
    }
  }
  EXPECT_GT(proposed, 50);
  EXPECT_GT(accepted, 20);
  EXPECT_LE(accepted, proposed);
}

TEST_F(SpeculativeStories, BatchedAndPreemptedRequestsGetTheSameAsWithoutSpeculation) {
  const std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  for (const int32_t n_blocks : {256, 24}) {  // 24: requests are preempted and recomputed
    const std::vector<Received> plain =
        run(config_with_blocks(m_.model->config(), n_blocks, SpeculativeMethod::kNone), requests);
    EngineStats stats;
    const std::vector<Received> speculated =
        run(config_with_blocks(m_.model->config(), n_blocks, SpeculativeMethod::kNgram), requests, &stats);
    expect_same(plain, speculated);
    EXPECT_GT(stats.scheduler.n_accepted_draft_tokens, 0) << n_blocks << " blocks";
    EXPECT_GT(stats.scheduler.n_speculative_steps, 0);
    if (n_blocks == 24) {
      EXPECT_GT(stats.scheduler.n_preemptions, 0);
    }
    // The outputs count what each request verified and kept.
    int64_t kept = 0;
    for (const Received& r : speculated) {
      int64_t last = 0;
      for (const RequestOutput& o : r.outputs) {
        EXPECT_GE(o.n_accepted_tokens, last);
        EXPECT_LE(o.n_accepted_tokens, o.n_proposed_tokens);
        last = std::max(last, o.n_accepted_tokens);
      }
      kept += last;
    }
    EXPECT_GT(kept, 0);
  }
}

TEST_F(SpeculativeStories, ARequestMayTurnSpeculationOff) {
  std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  for (EngineRequest& r : requests) r.speculative = false;
  EngineStats stats;
  const std::vector<Received> off = run(config_with_blocks(m_.model->config(), 256, SpeculativeMethod::kNgram), requests, &stats);
  EXPECT_EQ(stats.scheduler.n_draft_tokens, 0);
  expect_same(run(config_with_blocks(m_.model->config(), 256, SpeculativeMethod::kNone), requests), off);
}

// Requests that end at the context's last token and at max_tokens while proposals are
// in flight: nothing runs past either.
TEST_F(SpeculativeStories, ProposalsStopAtTheContextAndAtMaxTokens) {
  std::vector<EngineRequest> requests;
  EngineRequest full;
  full.prompt = m_.tokenizer->encode("The cat sat. The cat sat. The cat", true, false);
  full.sampling.temperature = 0.0f;
  full.stop.max_tokens = 1000;
  full.stop.ignore_eog = true;
  requests.push_back(full);
  for (int32_t max_tokens = 1; max_tokens <= 6; ++max_tokens) {
    EngineRequest r = full;
    r.stop.max_tokens = max_tokens;
    requests.push_back(r);
  }
  const std::vector<Received> plain = run(config_with_blocks(m_.model->config(), 256, SpeculativeMethod::kNone), requests);
  const std::vector<Received> speculated = run(config_with_blocks(m_.model->config(), 256, SpeculativeMethod::kNgram), requests);
  expect_same(plain, speculated);
  EXPECT_EQ(speculated[0].finish, FinishReason::kLength);
  EXPECT_EQ(static_cast<int32_t>(speculated[0].tokens.size() + full.prompt.size()), kMaxModelLen);
  for (int32_t max_tokens = 1; max_tokens <= 6; ++max_tokens) {
    EXPECT_EQ(speculated[static_cast<size_t>(max_tokens)].tokens.size(), static_cast<size_t>(max_tokens));
  }
}

// Many requests, some aborted mid-flight, in a cache small enough to preempt: when all
// are done every block is free and nothing is held for a request that left.
TEST_F(SpeculativeStories, AbortsAndPreemptionLeaveEveryBlockFree) {
  std::unique_ptr<Engine> engine = make_engine(m_, config_with_blocks(m_.model->config(), 24, SpeculativeMethod::kNgram));
  ASSERT_TRUE(engine);
  auto sink = std::make_shared<testing::RecordingSink>();
  std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  std::vector<RequestId> ids, kept;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < requests.size(); ++i) {
      Expected<std::vector<RequestId>> added = engine->add(requests[i], sink);
      ASSERT_TRUE(added.ok()) << added.status().message();
      ids.push_back(added->front());
    }
    for (size_t i = 0; i < ids.size(); i += 3) engine->abort(ids[i]);
  }
  ASSERT_TRUE(sink->wait_finished(ids));
  const EngineStats stats = engine->stats();
  EXPECT_EQ(stats.n_running + stats.n_waiting, 0);
  EXPECT_EQ(stats.n_free_kv_blocks, stats.n_kv_blocks);
  EXPECT_EQ(stats.kv_usage, 0.0);
  EXPECT_GT(stats.scheduler.n_accepted_draft_tokens, 0);
}

// The default model (SmolLM2-135M, Q4_1): a prompt that asks to repeat a text, greedy
// and sampled, gives the same tokens and log-probabilities with prompt lookup.
TEST(SpeculativeSmolLM2, RepeatingATextGivesTheSameTokensWithFewerSteps) {
  const std::string path =
      std::string(PAGODA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  PAGODA_SKIP_IF_MISSING(path);
  EngineConfig plain;
  plain.scheduler = {.max_batched_tokens = 128, .max_running = 4, .max_model_len = 512};
  plain.kv_memory.bytes = 64u << 20;
  EngineConfig speculative = plain;
  speculative.speculative.method = SpeculativeMethod::kNgram;
  speculative.speculative.adaptive = false;
  BatchedModel m = testing::load_batched_model_file(path, speculative.load_options());
  ASSERT_TRUE(m.model && m.tokenizer);
  const std::string text =
      "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a * b\n";
  std::vector<EngineRequest> requests(2);
  for (size_t i = 0; i < requests.size(); ++i) {
    EngineRequest& r = requests[i];
    r.prompt = m.tokenizer->encode("<|im_start|>user\nRepeat this code exactly:\n" + text +
                                       "<|im_end|>\n<|im_start|>assistant\n",
                                   /*add_special=*/false, /*parse_special=*/true);
    r.stop.max_tokens = 40;
    r.sampling.temperature = i == 0 ? 0.0f : 0.7f;
    r.sampling.seed = 11;
    r.sampling.logprobs = true;
  }
  std::unique_ptr<Engine> without = make_engine(m, plain);
  std::unique_ptr<Engine> with = make_engine(m, speculative);
  ASSERT_TRUE(without && with);
  for (const EngineRequest& request : requests) {
    expect_same(run_all(*without, {request}), run_all(*with, {request}));
  }
  const EngineStats stats = with->stats();
  EXPECT_GT(stats.scheduler.n_accepted_draft_tokens, 20);
  EXPECT_LT(stats.n_steps, without->stats().n_steps);
}

}  // namespace
}  // namespace pagoda::engine
