// The rejection rule of drawn proposals (RequestProcessor::sample with draft_probs), on
// a made-up distribution: whatever the proposal distribution q, the kept token is
// distributed as the model's p. Checked against p itself by a chi-square goodness-of-fit
// test over many seeded trials (deterministic: the same verdict every run), with a q
// far from p and one that puts mass where p has none.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "engine/request_processor.h"
#include "engine_test_util.h"

namespace pagoda::engine {
namespace {

constexpr int32_t kFirst = 10;  // the made-up distributions live on tokens 10..17
constexpr std::array<double, 6> kP = {0.5, 0.3, 0.1, 0.05, 0.03, 0.02};  // tokens 10..15
constexpr int kTrials = 20000;

class RejectionRule : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = testing::load_batched_model("stories260K.gguf", {});
    ASSERT_TRUE(m_.tokenizer);
    n_vocab_ = static_cast<size_t>(m_.tokenizer->n_vocab());
    // Two rows: the model's logits after the prompt (log p), and after the proposal.
    logits_.assign(2 * n_vocab_, -INFINITY);
    for (size_t i = 0; i < kP.size(); ++i) logits_[kFirst + i] = static_cast<float>(std::log(kP[i]));
    for (size_t i = 0; i < kP.size(); ++i) logits_[n_vocab_ + kFirst + i] = 0.0f;
  }

  // How often each token came first over the trials, proposals drawn from q.
  std::vector<int> first_tokens(const std::vector<double>& q_of_token, int* n_kept) {
    std::vector<float> q(n_vocab_, 0.0f);
    for (size_t i = 0; i < q_of_token.size(); ++i) q[kFirst + i] = static_cast<float>(q_of_token[i]);
    std::discrete_distribution<int> propose(q_of_token.begin(), q_of_token.end());
    std::mt19937 proposals(77);
    std::vector<int> counts(n_vocab_, 0);
    *n_kept = 0;
    const std::vector<int32_t> prompt = {1};
    StopConditions stop;
    stop.max_tokens = 8;
    for (int trial = 0; trial < kTrials; ++trial) {
      SamplingParams sampling;
      sampling.temperature = 1.0f;
      sampling.repetition_penalty = 1.0f;
      sampling.seed = static_cast<uint64_t>(trial);
      Expected<RequestProcessor> processor = RequestProcessor::create(1, prompt, sampling, stop, *m_.tokenizer);
      EXPECT_TRUE(processor.ok()) << processor.status().message();
      const std::vector<int32_t> draft = {kFirst + propose(proposals)};
      const Status sampled = processor->sample(logits_, draft, q);
      EXPECT_TRUE(sampled.ok()) << sampled.message();
      Expected<RequestOutput> output = processor->emit_tokens(100);
      EXPECT_TRUE(output.ok());
      const int32_t first = output->new_tokens.front();
      ++counts[static_cast<size_t>(first)];
      if (first == draft[0]) {
        ++*n_kept;
        EXPECT_EQ(output->new_tokens.size(), 2u);  // a kept proposal brings the next row's token
      } else {
        EXPECT_EQ(output->new_tokens.size(), 1u);
      }
    }
    return counts;
  }

  // Pearson's statistic of `counts` against p (5 degrees of freedom: 20.52 is the 0.001
  // level), and nothing outside p's support.
  static double goodness_of_fit(const std::vector<int>& counts) {
    double statistic = 0.0;
    int outside = 0;
    for (size_t t = 0; t < counts.size(); ++t) {
      const bool in_support = t >= kFirst && t < kFirst + kP.size();
      if (!in_support) {
        outside += counts[t];
        continue;
      }
      const double expected = kP[t - kFirst] * kTrials;
      statistic += (counts[t] - expected) * (counts[t] - expected) / expected;
    }
    EXPECT_EQ(outside, 0);
    return statistic;
  }

  testing::BatchedModel m_;
  size_t n_vocab_ = 0;
  std::vector<float> logits_;
};

TEST_F(RejectionRule, KeptTokensFollowTheModelWhateverTheProposals) {
  const std::vector<std::vector<double>> proposals = {
      {0.02, 0.03, 0.05, 0.1, 0.3, 0.5},       // reversed: most proposals are rejected
      {0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.15, 0.15},  // mass on tokens 16 and 17, where p is 0
      {0.5, 0.3, 0.1, 0.05, 0.03, 0.02},       // q = p: every proposal is kept
  };
  for (size_t i = 0; i < proposals.size(); ++i) {
    int n_kept = 0;
    const std::vector<int> counts = first_tokens(proposals[i], &n_kept);
    EXPECT_LT(goodness_of_fit(counts), 20.52) << "proposal distribution " << i;
    // The share kept is sum(min(p, q)): 0.2, 0.5 and 1 here (within 1.5%).
    const double expected_kept = i == 0 ? 0.2 : i == 1 ? 0.5 : 1.0;
    EXPECT_NEAR(static_cast<double>(n_kept) / kTrials, expected_kept, 0.015) << "proposal distribution " << i;
  }
}

}  // namespace
}  // namespace pagoda::engine
