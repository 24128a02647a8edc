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

#include "engine/draft_length.h"
#include "engine/ngram_proposer.h"
#include "engine/step_cost.h"
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

TEST(StepCost, PredictsFromWhatItMeasured) {
  // Each record() is a pass; a count measured twice or more is kept 10 passes, one
  // measured once 4 (an eighth of 10, at least 4).
  StepCostModel cost(64, /*memory_steps=*/10);
  EXPECT_EQ(cost.predict(4), 0.0);  // nothing measured
  cost.record(1, 0.010);  // passes 1, 2
  cost.record(1, 0.010);
  cost.record(9, 0.018);  // passes 3, 4
  cost.record(9, 0.018);
  EXPECT_DOUBLE_EQ(cost.predict(1), 0.010);
  EXPECT_DOUBLE_EQ(cost.predict(5), 0.014);   // between 1 and 9
  EXPECT_DOUBLE_EQ(cost.predict(30), 0.018);  // above the largest measured: no dearer
  cost.record(9, 0.028);  // slower: followed gently (pass 5)
  EXPECT_DOUBLE_EQ(cost.predict(9), 0.019);
  cost.record(9, 0.008);  // faster: followed at once, by half (pass 6)
  EXPECT_DOUBLE_EQ(cost.predict(9), 0.0135);
  cost.record(40, 0.5);  // measured once (pass 7)
  EXPECT_DOUBLE_EQ(cost.predict(40), 0.5);
  for (int i = 0; i < 4; ++i) cost.record(9, 0.0135);  // passes 8 to 11
  EXPECT_DOUBLE_EQ(cost.predict(40), 0.5);
  cost.record(9, 0.0135);  // pass 12: 5 after the single measure of 40
  EXPECT_DOUBLE_EQ(cost.predict(40), 0.0135);
  EXPECT_DOUBLE_EQ(cost.predict(1), 0.010);  // 10 passes after its last measure
  cost.record(0, 1.0);  // pass 13 (no such step: nothing measured)
  EXPECT_DOUBLE_EQ(cost.predict(1), 0.0135);  // forgotten: the nearest measured count
  cost.record(65, 1.0);  // past the largest count
  EXPECT_DOUBLE_EQ(cost.predict(64), 0.0135);
}

TEST(DraftLength, BacksOffWhenProposalsFailAndProbesAfterAWait) {
  DraftLengthState state;
  bool probe = true;
  EXPECT_EQ(draft_cap(state, 3, &probe), 3);
  EXPECT_FALSE(probe);
  EXPECT_EQ(draft_cap(state, 0, &probe), 0);
  for (int i = 0; i < 12; ++i) record_draft_outcome(state, 3, 0);
  EXPECT_LT(state.acceptance, 0.1f);
  EXPECT_EQ(draft_cap(state, 3, &probe), 0);  // a wait of 4 steps starts
  EXPECT_EQ(draft_cap(state, 3, &probe), 0);
  EXPECT_EQ(draft_cap(state, 3, &probe), 0);
  EXPECT_EQ(draft_cap(state, 3, &probe), 0);
  EXPECT_EQ(draft_cap(state, 3, &probe), 1);  // then one probe
  EXPECT_TRUE(probe);
  record_draft_outcome(state, 1, 0);  // it failed: the next wait is 8 steps
  EXPECT_EQ(draft_cap(state, 3, &probe), 0);
  EXPECT_EQ(state.wait_steps, 8);
  record_draft_outcome(state, 1, 1);  // a kept proposal resets the waits to come
  EXPECT_EQ(state.next_wait, 4);
}

TEST(DraftLength, AnEstimateNoVerificationRefreshesDriftsBackToThePrior) {
  DraftLengthState state;
  record_draft_outcome(state, 3, 0);  // one unlucky first verification
  EXPECT_FLOAT_EQ(state.acceptance, 0.42f);
  for (int i = 0; i < 9; ++i) record_draft_idle(state, kPriorAcceptance);
  EXPECT_LT(state.acceptance, 0.5f);
  record_draft_idle(state, kPriorAcceptance);  // 10 idle steps: 0.6 - 0.18 (15/16)^10
  EXPECT_NEAR(state.acceptance, 0.6f - 0.18f * std::pow(15.0f / 16.0f, 10.0f), 1e-5f);
  EXPECT_GT(state.acceptance, 0.5f);
  for (int i = 0; i < 1000; ++i) record_draft_idle(state, kPriorAcceptance);
  EXPECT_LE(state.acceptance, kPriorAcceptance);
  EXPECT_GT(state.acceptance, 0.599f);
  // An estimate above the prior stays where its verifications put it.
  for (int i = 0; i < 10; ++i) record_draft_outcome(state, 4, 4);
  const float high = state.acceptance;
  EXPECT_GT(high, 0.95f);
  record_draft_idle(state, kPriorAcceptance);
  EXPECT_FLOAT_EQ(state.acceptance, high);
}

TEST(DraftLength, ANewRequestStartsFromWhatTheOthersKept) {
  SharedAcceptance shared;
  EXPECT_FLOAT_EQ(shared.estimate(), kPriorAcceptance);  // nothing verified yet
  shared.record(4, 4);  // the prior counts as one verification: (0.6 + 1) / 2
  EXPECT_FLOAT_EQ(shared.estimate(), 0.8f);
  shared.record(0, 0);  // no proposal: nothing to learn
  EXPECT_FLOAT_EQ(shared.estimate(), 0.8f);
  shared.record(4, 1);  // (0.6 + 1 + 0.25) / 3
  EXPECT_NEAR(shared.estimate(), 1.85f / 3.0f, 1e-6f);
  for (int i = 0; i < 200; ++i) shared.record(4, 4);
  EXPECT_GT(shared.estimate(), 0.999f);
  // Later verifications weigh a sixteenth each, however many came before.
  shared.record(4, 0);
  EXPECT_NEAR(shared.estimate(), 0.9375f, 1e-3f);

  DraftLengthState fresh;
  start_from_shared(fresh, shared);
  EXPECT_FLOAT_EQ(fresh.acceptance, shared.estimate());
  // Once its own proposals are verified, a request keeps to its own estimate...
  record_draft_outcome(fresh, 2, 0);
  EXPECT_EQ(fresh.verifications, 1);
  const float own = fresh.acceptance;
  EXPECT_FLOAT_EQ(own, 0.7f * shared.estimate());
  for (int i = 0; i < 20; ++i) shared.record(4, 4);
  start_from_shared(fresh, shared);
  EXPECT_FLOAT_EQ(fresh.acceptance, own);
  // ...which, while nothing verifies it, drifts towards the shared one.
  record_draft_idle(fresh, shared.estimate());
  EXPECT_NEAR(fresh.acceptance, own + (shared.estimate() - own) / 16.0f, 1e-6f);

  // Proposals the others never keep: a new request waits before its first.
  SharedAcceptance useless;
  for (int i = 0; i < 100; ++i) useless.record(3, 0);
  DraftLengthState next;
  start_from_shared(next, useless);
  bool probe = true;
  EXPECT_EQ(draft_cap(next, 3, &probe), 0);
  EXPECT_FALSE(probe);
  EXPECT_EQ(next.wait_steps, 4);
}

// Passes of every row count measured (twice, so that they are kept) at fixed + per_row
// seconds a row.
StepCostModel measured_cost(double fixed, double per_row) {
  StepCostModel cost(64, /*memory_steps=*/1000);
  for (int32_t rows = 1; rows <= 64; ++rows) {
    cost.record(rows, fixed + per_row * rows);
    cost.record(rows, fixed + per_row * rows);
  }
  return cost;
}

std::vector<int32_t> chosen_lengths(std::vector<DraftCandidate> candidates, int32_t n_decoding,
                                    const StepCostModel& cost, double draft_pass_seconds = 0.0) {
  std::vector<DraftGain> scratch;
  choose_draft_lengths(candidates, n_decoding, cost, draft_pass_seconds, scratch);
  std::vector<int32_t> chosen;
  for (const DraftCandidate& c : candidates) chosen.push_back(c.chosen);
  return chosen;
}

TEST(DraftLength, GivesRowsToTheProposalsWorthTheirCost) {
  const std::vector<DraftCandidate> three = {{.acceptance = 0.9f, .max_tokens = 4},
                                             {.acceptance = 0.5f, .max_tokens = 4},
                                             {.acceptance = 0.2f, .max_tokens = 4}};
  // Rows cost nothing more (decoding bound by reading the weights): every proposal.
  const StepCostModel flat = measured_cost(0.01, 0.0);
  EXPECT_EQ(chosen_lengths(three, 3, flat), (std::vector<int32_t>{4, 4, 4}));
  // Nothing measured yet: every proposal too, so that the sizes get measured.
  EXPECT_EQ(chosen_lengths(three, 3, StepCostModel(64)), (std::vector<int32_t>{4, 4, 4}));
  // Bound by arithmetic (a pass costs its rows): a proposal brings less than the row it
  // takes, none is worth it.
  const StepCostModel linear = measured_cost(0.0, 0.001);
  EXPECT_EQ(chosen_lengths(three, 3, linear), (std::vector<int32_t>{0, 0, 0}));
  // A fixed part and a part per row (10 ms + 1 ms a row): with 3 rows, 3 tokens take
  // 13 ms; a proposal is worth its row while its chance beats the step's tokens per
  // ms by enough: 0.9, 0.81, 0.73, 0.66 (the first request's) and 0.5 are, 0.25 is not.
  const StepCostModel mixed = measured_cost(0.010, 0.001);
  EXPECT_EQ(chosen_lengths(three, 3, mixed), (std::vector<int32_t>{4, 1, 0}));
  // With a draft model each pass costs too, whoever it serves: at 4 ms a pass, one pass
  // for the two likelier requests (4.4 tokens in 19 ms) beats none (3 in 13) and two
  // (5.46 in 25); at 20 ms a pass, none pays.
  EXPECT_EQ(chosen_lengths(three, 3, mixed, 0.004), (std::vector<int32_t>{1, 1, 0}));
  EXPECT_EQ(chosen_lengths(three, 3, mixed, 0.020), (std::vector<int32_t>{0, 0, 0}));
  // A proposal must bring a quarter more than its row costs: with 3 rows in 13 ms (0.23
  // tokens a ms), a row of 1 ms needs a chance above 0.29, so 0.25 (worth it without
  // the margin) is not taken, 0.3 is.
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.25f, .max_tokens = 1}}, 3, mixed), (std::vector<int32_t>{0}));
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.3f, .max_tokens = 1}}, 3, mixed), (std::vector<int32_t>{1}));
  // A probe is verified whatever it costs.
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.05f, .max_tokens = 1, .probe = true}}, 3, linear),
            (std::vector<int32_t>{1}));
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
