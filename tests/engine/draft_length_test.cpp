// How many proposals each request verifies (draft_length.h): the estimate of the chance a
// proposal is kept, shared and per request, and the choice of proposals worth their rows
// by what a pass costs as measured (step_cost.h).

#include "engine/draft_length.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/step_cost.h"

namespace pagoda::engine {
namespace {

TEST(StepCost, PredictsFromWhatItMeasured) {
  // Each record() is a pass; a count measured twice or more is kept 10 passes, one
  // measured once 4 (an eighth of 10, at least 4).
  StepCostModel cost(64, /*memory_steps=*/10);
  EXPECT_EQ(cost.predict(4), 0.0);  // nothing measured
  cost.record(1, 0.010);            // passes 1, 2
  cost.record(1, 0.010);
  cost.record(9, 0.018);  // passes 3, 4
  cost.record(9, 0.018);
  EXPECT_DOUBLE_EQ(cost.predict(1), 0.010);
  EXPECT_DOUBLE_EQ(cost.predict(5), 0.014);   // between 1 and 9
  EXPECT_DOUBLE_EQ(cost.predict(30), 0.018);  // above the largest measured: no dearer
  cost.record(9, 0.028);                      // slower: followed gently (pass 5)
  EXPECT_DOUBLE_EQ(cost.predict(9), 0.019);
  cost.record(9, 0.008);  // faster: followed at once, by half (pass 6)
  EXPECT_DOUBLE_EQ(cost.predict(9), 0.0135);
  cost.record(40, 0.5);  // measured once (pass 7)
  EXPECT_DOUBLE_EQ(cost.predict(40), 0.5);
  for (int i = 0; i < 4; ++i) cost.record(9, 0.0135);  // passes 8 to 11
  EXPECT_DOUBLE_EQ(cost.predict(40), 0.5);
  cost.record(9, 0.0135);  // pass 12: 5 after the single measure of 40
  EXPECT_DOUBLE_EQ(cost.predict(40), 0.0135);
  EXPECT_DOUBLE_EQ(cost.predict(1), 0.010);   // 10 passes after its last measure
  cost.record(0, 1.0);                        // pass 13 (no such step: nothing measured)
  EXPECT_DOUBLE_EQ(cost.predict(1), 0.0135);  // forgotten: the nearest measured count
  cost.record(65, 1.0);                       // past the largest count
  EXPECT_DOUBLE_EQ(cost.predict(64), 0.0135);
}

// Proposals are priced from decoding steps (every row with logits, as a proposal's);
// steps with prompt rows (which have none, and cost less) price them only until a
// decoding step is measured.
TEST(StepCost, PricesProposalsFromDecodingSteps) {
  SchedulerOutput decoding;
  decoding.scheduled = {{.id = 1, .first_position = 40, .n_tokens = 1, .samples = true},
                        {.id = 2, .first_position = 7, .n_tokens = 4, .n_draft_tokens = 3, .samples = true}};
  decoding.n_tokens = 5;
  EXPECT_EQ(decoding.rows_with_logits(), 5);
  // A prompt's middle chunk (no logits) beside a decoding request.
  SchedulerOutput chunk = decoding;
  chunk.scheduled[1] = {.id = 3, .first_position = 0, .n_tokens = 4, .samples = false};
  EXPECT_EQ(chunk.rows_with_logits(), 1);
  // A prompt's last chunk: only its last row has logits.
  SchedulerOutput prompt_end = decoding;
  prompt_end.scheduled[1] = {.id = 3, .first_position = 16, .n_tokens = 4, .samples = true};
  EXPECT_EQ(prompt_end.rows_with_logits(), 2);

  StepCosts costs(64);
  EXPECT_FALSE(costs.pricing().any_measured());
  costs.record(chunk, 0.004);  // no decoding step yet: every step prices
  EXPECT_TRUE(costs.pricing().measured(5));
  EXPECT_DOUBLE_EQ(costs.pricing().predict(5), 0.004);
  costs.record(decoding, 0.020);  // from now on the decoding steps alone
  EXPECT_DOUBLE_EQ(costs.pricing().predict(5), 0.020);
  costs.record(prompt_end, 0.004);
  costs.record(chunk, 0.004);
  EXPECT_DOUBLE_EQ(costs.pricing().predict(5), 0.020);
  costs.record(decoding, 0.010);  // faster: followed by half
  EXPECT_DOUBLE_EQ(costs.pricing().predict(5), 0.015);
}

TEST(DraftLength, BacksOffWhenProposalsFailAndProbesAfterAWait) {
  DraftLengthState state;
  bool probe = true;
  EXPECT_EQ(draft_cap(state, 3, &probe), 3);
  EXPECT_FALSE(probe);
  EXPECT_EQ(draft_cap(state, 0, &probe), 0);
  for (int i = 0; i < 12; ++i) record_draft_outcome(state, 3, 0);
  EXPECT_LT(state.acceptance(), 0.1f);
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
  // One unlucky first verification: its first proposal refused, one trial failed against
  // the prior's 2 (1.2 kept), the prior's counts weighing 0.7: 0.84 / 2.4.
  record_draft_outcome(state, 3, 0);
  EXPECT_FLOAT_EQ(state.acceptance(), 0.35f);
  for (int i = 0; i < 10; ++i) record_draft_idle(state, kPriorAcceptance);
  EXPECT_NEAR(state.acceptance(), 0.6f - 0.25f * std::pow(15.0f / 16.0f, 10.0f), 1e-5f);
  for (int i = 0; i < 1000; ++i) record_draft_idle(state, kPriorAcceptance);
  EXPECT_LE(state.acceptance(), kPriorAcceptance);
  EXPECT_GT(state.acceptance(), 0.599f);
  // An estimate above the prior stays where its verifications put it.
  for (int i = 0; i < 10; ++i) record_draft_outcome(state, 4, 4);
  const float high = state.acceptance();
  EXPECT_GT(high, 0.95f);
  record_draft_idle(state, kPriorAcceptance);
  EXPECT_FLOAT_EQ(state.acceptance(), high);
}

TEST(DraftLength, ANewRequestStartsFromWhatTheOthersKept) {
  SharedAcceptance shared;
  // Nothing verified yet: the prior, and an optimistic start of one standard error above
  // it (0.6 + sqrt(0.6 x 0.4 / 2)).
  EXPECT_FLOAT_EQ(shared.mean(), kPriorAcceptance);
  EXPECT_NEAR(shared.estimate(), 0.6f + std::sqrt(0.12f), 1e-6f);
  shared.record(4, 4);  // 4 kept of 4 tried, beside the prior's 1.2 of 2
  EXPECT_NEAR(shared.mean(), 5.2f / 6.0f, 1e-6f);
  EXPECT_FLOAT_EQ(shared.estimate(), 1.0f);  // capped
  shared.record(0, 0);                       // no proposal: nothing to learn
  EXPECT_NEAR(shared.mean(), 5.2f / 6.0f, 1e-6f);
  // 1 kept of 4: 2 tried (the refused one ends the verification). The earlier counts
  // weigh 15/16: (3.75 + 1 + 1.2) / (3.75 + 2 + 2), and the error over the 6 tried.
  shared.record(4, 1);
  const float mean = 5.95f / 7.75f;
  EXPECT_NEAR(shared.mean(), mean, 1e-6f);
  EXPECT_NEAR(shared.estimate(), mean + std::sqrt(mean * (1.0f - mean) / 8.0f), 1e-6f);
  // All kept from now on: the decayed counts reach 64 of 64 (4 / (1 - 15/16)), beside the
  // prior's, which stay.
  for (int i = 0; i < 200; ++i) shared.record(4, 4);
  EXPECT_NEAR(shared.mean(), 65.2f / 66.0f, 1e-4f);
  EXPECT_EQ(shared.trials_seen(), 806);

  DraftLengthState fresh;
  start_from_shared(fresh, shared);
  EXPECT_FLOAT_EQ(fresh.acceptance(), shared.estimate());
  // Once its own proposals are verified, a request keeps to its own estimate...
  record_draft_outcome(fresh, 2, 0);
  EXPECT_EQ(fresh.verifications, 1);
  const float own = fresh.acceptance();
  EXPECT_NEAR(own, 1.4f * shared.estimate() / 2.4f, 1e-6f);
  for (int i = 0; i < 20; ++i) shared.record(4, 4);
  start_from_shared(fresh, shared);
  EXPECT_FLOAT_EQ(fresh.acceptance(), own);
  // ...which, while nothing verifies it, drifts towards the shared one.
  record_draft_idle(fresh, shared.estimate());
  EXPECT_NEAR(fresh.acceptance(), own + (shared.estimate() - own) / 16.0f, 1e-6f);

  // Proposals the others never keep: a new request waits before its first.
  SharedAcceptance useless;
  for (int i = 0; i < 100; ++i) useless.record(3, 0);
  EXPECT_LT(useless.estimate(), 0.1f);
  DraftLengthState next;
  start_from_shared(next, useless);
  bool probe = true;
  EXPECT_EQ(draft_cap(next, 3, &probe), 0);
  EXPECT_FALSE(probe);
  EXPECT_EQ(next.wait_steps, 4);
}

// Proposals kept each with chance `a`, verified k at a time: the shared and the own
// estimates find `a` whatever k. (The share kept of those proposed would not: with k = 4
// it reads 0.33 for 0.6 and 0.78 for 0.9, the untried proposals counted as refused.)
TEST(DraftLength, EstimatesTheChanceOfAProposalWhateverItsVerificationsLength) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (const float a : {0.3f, 0.6f, 0.9f}) {
    for (const int32_t k : {1, 2, 4}) {
      SharedAcceptance shared;
      DraftLengthState own;
      double shared_sum = 0.0, own_sum = 0.0;
      int32_t n = 0;
      for (int32_t i = 0; i < 4000; ++i) {
        int32_t kept = 0;
        while (kept < k && uniform(random) < a) ++kept;
        shared.record(k, kept);
        record_draft_outcome(own, k, kept);
        if (i < 100) continue;  // past the prior
        shared_sum += shared.mean();
        own_sum += own.acceptance();
        ++n;
      }
      // The prior's 2 trials still count beside the last few dozen (0.336 at 0.3, k = 1).
      EXPECT_NEAR(shared_sum / n, a, 0.05) << "a = " << a << ", k = " << k;
      EXPECT_NEAR(own_sum / n, a, 0.05) << "a = " << a << ", k = " << k;
      // Optimism fades with the trials seen (thousands here).
      EXPECT_LT(shared.estimate() - shared.mean(), 0.02f);
      EXPECT_GE(shared.estimate(), shared.mean());
    }
  }
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
  // 13 ms; a proposal is worth its row while its chance beats the step's tokens per ms:
  // 0.9, 0.81, 0.73, 0.66 (the first request's) and 0.5 (the second's first) are, the
  // second's 0.25 is not (1 ms x 0.37 tokens a ms by then), nor the third's 0.2.
  const StepCostModel mixed = measured_cost(0.010, 0.001);
  EXPECT_EQ(chosen_lengths(three, 3, mixed), (std::vector<int32_t>{4, 1, 0}));
  // With a draft model each pass costs too, whoever it serves: at 3 ms a pass, one pass
  // for the two likelier requests (4.4 tokens in 18 ms) beats none (3 in 13) and two
  // (5.46 in 23); at 20 ms a pass, none pays.
  EXPECT_EQ(chosen_lengths(three, 3, mixed, 0.003), (std::vector<int32_t>{1, 1, 0}));
  EXPECT_EQ(chosen_lengths(three, 3, mixed, 0.020), (std::vector<int32_t>{0, 0, 0}));
  // With 3 rows in 13 ms (0.23 tokens a ms), a row of 1 ms needs a chance above 0.23:
  // 0.22 is not taken, 0.24 is.
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.22f, .max_tokens = 1}}, 3, mixed),
            (std::vector<int32_t>{0}));
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.24f, .max_tokens = 1}}, 3, mixed),
            (std::vector<int32_t>{1}));
  // A probe is verified whatever it costs.
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.05f, .max_tokens = 1, .probe = true}}, 3, linear),
            (std::vector<int32_t>{1}));
}

// Until the engine's verifications have tried kExplorationTrials proposals, a request's
// proposals are probes (EngineCore::propose_drafts): all verified, whatever the rows cost.
TEST(DraftLength, TheFirstProposalsAreVerifiedWhateverTheyCost) {
  SharedAcceptance shared;
  EXPECT_TRUE(shared.exploring());
  shared.record(4, 4);  // 4 tried
  EXPECT_TRUE(shared.exploring());
  shared.record(3, 2);  // 3 more
  EXPECT_TRUE(shared.exploring());
  shared.record(2, 0);  // 1 more: 8
  EXPECT_FALSE(shared.exploring());
  EXPECT_EQ(shared.trials_seen(), SharedAcceptance::kExplorationTrials);
  // A row costs what a token does: no proposal is worth it, unless it is a probe.
  const StepCostModel linear = measured_cost(0.0, 0.001);
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.6f, .max_tokens = 3}}, 3, linear),
            (std::vector<int32_t>{0}));
  EXPECT_EQ(chosen_lengths({{.acceptance = 0.6f, .max_tokens = 3, .probe = true}}, 3, linear),
            (std::vector<int32_t>{3}));
}

// A draft model's first request: a target step of 37 ms whatever its rows (decoding bound
// by reading the weights), a draft pass of 12.5 ms, and a catch-up over a prompt of 146
// tokens at 1.5 ms a token spread over 16 steps (13.7 ms a step). Judged by the prior
// (0.6) no proposal pays: the best, two, bring 1.96 tokens in 75.9 ms against 1 in 37.
// The engine's optimistic start, with nothing verified yet, tries four (4.49 tokens in
// 101 ms), and so measures the draft.
TEST(DraftLength, ADraftModelsFirstRequestTriesItsProposals) {
  const StepCostModel cost = measured_cost(0.037, 0.0001);
  const double catch_up = 146 * 0.0015 / 16;
  const DraftCandidate prior{
      .acceptance = kPriorAcceptance, .max_tokens = 4, .fixed_seconds = catch_up};
  EXPECT_EQ(chosen_lengths({prior}, 1, cost, 0.0125), (std::vector<int32_t>{0}));
  DraftCandidate first = prior;
  first.acceptance = SharedAcceptance().estimate();
  EXPECT_EQ(chosen_lengths({first}, 1, cost, 0.0125), (std::vector<int32_t>{4}));
}

}  // namespace
}  // namespace pagoda::engine
