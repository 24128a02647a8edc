// A token chosen where the logits are (sampling/row_sampling.h's sample_row, which the
// backends' sample_rows ops make, with the row Sampler::device_sampling gives) is the
// token the sampler itself takes, draw for draw: over vocabularies of 1 to 49152, every
// mix of temperature, top-k, top-p, min-p, logit bias and the three penalties (their
// histories growing as tokens are accepted), and rows left to the host, which the
// sampler then takes with the uniform device_sampling took; with log-probabilities asked,
// sample_row's report is the sampler's. Sampler::samples_on_device admits the requests
// whose token can be so chosen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/sampler.h"
#include "sampling/draw.h"
#include "sampling/row_sampling.h"

namespace pagoda::engine {
namespace {

Sampler make_sampler(const SamplingParams& params, int32_t n_vocab) {
  Expected<Sampler> sampler = Sampler::create(params, n_vocab);
  EXPECT_TRUE(sampler.ok()) << sampler.status().message();
  return std::move(sampler).value();
}

std::vector<float> logits_for(int32_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> logits(static_cast<size_t>(n));
  for (float& x : logits) x = normal(rng);
  for (int32_t i = 3; i < n; i += 11) logits[static_cast<size_t>(i)] = -std::numeric_limits<float>::infinity();
  return logits;
}

// Runs `steps` tokens through two samplers made alike: `host` samples each from the
// logits; `device` gives its row to sample_row, and samples the logits itself only where
// the row is left to the host. Both accept their token; the tokens must agree. Returns
// how many rows were left to the host.
int expect_same_tokens(const SamplingParams& params, int32_t n, int steps, float scale, const std::string& what) {
  Sampler host = make_sampler(params, n), device = make_sampler(params, n);
  EXPECT_TRUE(device.samples_on_device()) << what;
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 40; ++i) prompt.push_back((i * 7919) % n);
  host.accept_prompt(prompt);
  device.accept_prompt(prompt);
  std::vector<Candidate> candidates(static_cast<size_t>(n));
  std::vector<float> weights(static_cast<size_t>(n));
  std::vector<LogitAdjustment> adjustments = {LogitAdjustment{0, kAddBias, 9.0f, 0.0f}};  // another row's
  int left = 0;
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> logits = logits_for(n, static_cast<uint32_t>(step * 31 + n), scale);
    Expected<SampledToken> sampled = host.sample(logits);
    EXPECT_TRUE(sampled.ok()) << what << ": " << sampled.status().message();
    if (!sampled.ok()) return left;
    adjustments.resize(1);
    RowSampling row;
    device.device_sampling(adjustments, std::span<RowSampling>(&row, 1));
    EXPECT_EQ(row.first_adjustment, 1) << what;
    RowLogprobs report;
    int32_t token = sample_row(logits, row, std::span<const LogitAdjustment>(adjustments).subspan(1), candidates, weights,
                               kRowSamplingCapacity, &report);
    if (token != kLeftToHost && params.logprobs) {
      EXPECT_EQ(report.chosen, sampled->logprob) << what << ", step " << step;
      EXPECT_EQ(report.n_top, params.top_logprobs) << what;
      for (int32_t j = 0; j < report.n_top && static_cast<size_t>(j) < sampled->top.size(); ++j) {
        EXPECT_EQ(report.top[j].token, sampled->top[static_cast<size_t>(j)].token) << what << ", step " << step;
        EXPECT_EQ(report.top[j].logprob, sampled->top[static_cast<size_t>(j)].logprob) << what << ", step " << step;
      }
    }
    if (token == kLeftToHost) {
      ++left;
      Expected<SampledToken> fallback = device.sample(logits);
      EXPECT_TRUE(fallback.ok()) << what;
      token = fallback.ok() ? fallback->token : -1;
    } else {
      device.took_device_token();
    }
    EXPECT_EQ(token, sampled->token) << what << ", step " << step;
    if (token != sampled->token) return left;
    host.accept(sampled->token);
    device.accept(token);
  }
  return left;
}

TEST(DeviceSampling, SampleRowIsTheSamplersTokenForEveryStage) {
  int cases = 0;
  for (const int32_t n : {1, 7, 300, 49152}) {
    for (int c = 0; c < 24; ++c) {
      SamplingParams p;
      p.seed = 1000 + static_cast<uint64_t>(c * 131 + n);
      p.temperature = c % 6 == 0 ? 0.0f : 0.2f + 0.35f * static_cast<float>(c % 5);
      if (c % 4 == 1) p.top_k = 1 + (c * 37) % 60;
      if (c % 3 == 1) p.top_p = 0.5f + 0.1f * static_cast<float>(c % 5);
      if (c % 5 == 2) p.min_p = 0.02f * static_cast<float>(1 + c % 4);
      if (c % 4 == 2) p.logit_bias = {{0, 2.5f}, {n - 1, -1.0f}, {n / 2, -INFINITY}};
      if (c % 3 == 0) p.repetition_penalty = 1.3f, p.repetition_window = c % 2 == 0 ? 16 : -1;
      if (c % 5 == 3) p.presence_penalty = 0.7f;
      if (c % 7 == 4) p.frequency_penalty = -0.4f;
      if (n == 1 && !p.logit_bias.empty()) p.logit_bias.resize(1);
      if (c % 4 == 3) p.logprobs = true, p.top_logprobs = std::min(n, c % 9);
      expect_same_tokens(p, n, 40, 3.0f, "n " + std::to_string(n) + ", case " + std::to_string(c));
      ++cases;
    }
  }
  EXPECT_EQ(cases, 96);
}

TEST(DeviceSampling, RowsPastTheCapacityAreLeftToTheHostAndDrawTheSameToken) {
  const int32_t n = 49152;
  SamplingParams top_k;
  top_k.temperature = 0.9f, top_k.top_k = kRowSamplingCapacity + 1, top_k.seed = 5;
  EXPECT_EQ(expect_same_tokens(top_k, n, 12, 3.0f, "top-k past the capacity"), 12);
  SamplingParams top_p;  // flat logits: the head of 0.99 of the mass holds most of the vocabulary
  top_p.temperature = 1.0f, top_p.top_p = 0.99f, top_p.seed = 6;
  EXPECT_EQ(expect_same_tokens(top_p, n, 12, 0.05f, "a long top-p head"), 12);
  SamplingParams min_p;
  min_p.temperature = 1.0f, min_p.min_p = 0.01f, min_p.seed = 7;
  EXPECT_EQ(expect_same_tokens(min_p, n, 12, 0.05f, "a long min-p list"), 12);
  SamplingParams penalized;  // no truncation: the whole row's draw, on the device however long
  penalized.temperature = 1.0f, penalized.presence_penalty = 0.5f, penalized.logit_bias = {{7, 2.0f}}, penalized.seed = 10;
  EXPECT_EQ(expect_same_tokens(penalized, n, 12, 0.05f, "bias and penalties alone"), 0);
  SamplingParams short_head = top_p;  // peaked logits: a short head, decided on the device
  short_head.seed = 8;
  EXPECT_EQ(expect_same_tokens(short_head, n, 12, 6.0f, "a short top-p head"), 0);
}

TEST(DeviceSampling, AnInfiniteAdjustedLogitIsLeftToTheHost) {
  SamplingParams p;  // a repetition penalty so small that a repeated positive logit overflows
  p.temperature = 0.7f, p.repetition_penalty = 1e-38f, p.repetition_window = -1, p.seed = 9;
  EXPECT_GT(expect_same_tokens(p, 300, 10, 3.0f, "+inf after the penalty"), 0);
}

TEST(DeviceSampling, SamplesOnDeviceAdmitsWhatOnlyTheTokenNeeds) {
  const auto on_device = [](const SamplingParams& params) { return make_sampler(params, 100).samples_on_device(); };
  SamplingParams plain;
  plain.temperature = 0.7f;
  EXPECT_TRUE(on_device(plain));
  SamplingParams p = plain;
  p.temperature = 0.0f;
  EXPECT_TRUE(on_device(p)) << "greedy";
  p = plain, p.top_k = 5, p.top_p = 0.9f, p.min_p = 0.05f, p.logit_bias = {{3, 1.0f}, {4, -2.0f}};
  p.presence_penalty = 0.5f, p.repetition_penalty = 1.2f;
  EXPECT_TRUE(on_device(p)) << "every stage";
  p = plain, p.logit_bias = {{3, 1.0f}, {3, 2.0f}};
  EXPECT_FALSE(on_device(p)) << "a token biased twice";
  p = plain, p.logprobs = true, p.top_logprobs = kMaxDeviceTopLogprobs;
  EXPECT_TRUE(on_device(p)) << "log-probabilities";
  p = plain, p.top_logprobs = kMaxDeviceTopLogprobs + 1;
  EXPECT_FALSE(on_device(p)) << "more top log-probabilities than a row reports";
}

TEST(DeviceSampling, DeviceSamplingGivesEachTokenOnceInTheSamplersOrderOfOperations) {
  SamplingParams p;
  p.temperature = 0.5f, p.top_k = 7, p.top_p = 0.8f, p.min_p = 0.25f;
  p.logit_bias = {{5, 1.5f}, {9, -INFINITY}};
  p.repetition_penalty = 1.5f, p.repetition_window = 4;
  p.presence_penalty = 0.25f, p.frequency_penalty = 0.5f;
  p.seed = 77;
  Sampler sampler = make_sampler(p, 20);
  sampler.accept_prompt(std::vector<int32_t>{1, 5, 5, 2, 3});  // window: 5 5 2 3
  sampler.accept(5);                                            // window: 5 2 3 5; 5 generated once
  sampler.accept(7);                                            // window: 2 3 5 7; 7 generated once
  sampler.accept(7);                                            // window: 3 5 7 7; 7 twice
  std::vector<LogitAdjustment> adjustments;
  RowSampling row;
  sampler.device_sampling(adjustments, std::span<RowSampling>(&row, 1));
  EXPECT_EQ(row.temperature, 0.5f);
  EXPECT_EQ(row.top_k, 7);
  EXPECT_EQ(row.top_p, 0.8f);
  EXPECT_EQ(row.log_min_p, std::log(0.25f));
  EXPECT_EQ(row.repetition_penalty, 1.5f);
  EXPECT_EQ(row.first_adjustment, 0);
  ASSERT_EQ(row.n_adjustments, static_cast<int32_t>(adjustments.size()));
  std::map<int32_t, LogitAdjustment> by_token;
  for (const LogitAdjustment& a : adjustments) EXPECT_TRUE(by_token.emplace(a.token, a).second) << a.token;
  ASSERT_EQ(by_token.size(), 4u);  // 3, 5, 7, 9
  EXPECT_EQ(by_token[3].flags, kRepeated);
  EXPECT_EQ(by_token[5].flags, kAddBias | kRepeated | kSubtract);
  EXPECT_EQ(by_token[5].bias, 1.5f);
  EXPECT_EQ(by_token[5].subtract, 1.0f * 0.5f + 0.25f);
  EXPECT_EQ(by_token[7].flags, kRepeated | kSubtract);
  EXPECT_EQ(by_token[7].subtract, 2.0f * 0.5f + 0.25f);
  EXPECT_EQ(by_token[9].flags, kAddBias);
  EXPECT_EQ(by_token[9].bias, -INFINITY);
  // The uniform is the generator's next: a twin sampler draws the same one.
  Sampler twin = make_sampler(p, 20);
  EXPECT_EQ(row.uniform, twin.draw_uniform());
}

TEST(DeviceSampling, VerificationRowsTakeTheGeneratorsNumbersInTheOrderTokensUseThem) {
  SamplingParams p;
  p.temperature = 0.8f, p.top_k = 30, p.seed = 31;
  Sampler sampler = make_sampler(p, 50), twin = make_sampler(p, 50);
  ASSERT_TRUE(sampler.verifies_on_device());
  std::vector<double> numbers;
  for (int i = 0; i < 6; ++i) numbers.push_back(twin.draw_uniform());
  std::vector<LogitAdjustment> adjustments;
  std::vector<RowSampling> rows(4);  // the next token and one after each of 3 proposals
  sampler.device_sampling(adjustments, rows);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].uniform, numbers[i]) << i;
  // Two tokens kept (a proposal and the token after it): the other two numbers serve the
  // next tokens, then the generator goes on.
  sampler.took_device_token();
  sampler.took_device_token();
  std::vector<RowSampling> next(3);
  sampler.device_sampling(adjustments, next);
  EXPECT_EQ(next[0].uniform, numbers[2]);
  EXPECT_EQ(next[1].uniform, numbers[3]);
  EXPECT_EQ(next[2].uniform, numbers[4]);
  // A row left to the host: sample() takes the first kept number as its own.
  EXPECT_EQ(sampler.draw_uniform(), numbers[2]);
  EXPECT_EQ(sampler.draw_uniform(), numbers[3]);
  EXPECT_EQ(sampler.draw_uniform(), numbers[4]);
  EXPECT_EQ(sampler.draw_uniform(), numbers[5]);
  // Penalties change from row to row with the proposals before them: no rows past one.
  p.presence_penalty = 0.5f;
  EXPECT_FALSE(make_sampler(p, 50).verifies_on_device());
  EXPECT_TRUE(make_sampler(p, 50).samples_on_device());
}

}  // namespace
}  // namespace pagoda::engine
