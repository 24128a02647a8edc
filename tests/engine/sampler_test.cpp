#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace pagoda::engine {
namespace {

std::vector<float> random_logits(int32_t n, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> logits(static_cast<size_t>(n));
  for (float& x : logits) x = normal(rng);
  return logits;
}

// Natural-log probabilities as logits: softmax(log p) == p.
std::vector<float> logits_of(std::initializer_list<double> probabilities) {
  std::vector<float> logits;
  for (double p : probabilities) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

Sampler make_sampler(const SamplingParams& params, int32_t n_vocab) {
  Expected<Sampler> sampler = Sampler::create(params, n_vocab);
  EXPECT_TRUE(sampler.ok()) << sampler.status().message();
  return std::move(sampler).value();
}

int32_t sample_token(Sampler& sampler, const std::vector<float>& logits) {
  Expected<SampledToken> sampled = sampler.sample(logits);
  EXPECT_TRUE(sampled.ok()) << sampled.status().message();
  return sampled.ok() ? sampled->token : -1;
}

// The tokens a sampler draws over many tries: its support.
std::set<int32_t> drawn_tokens(SamplingParams params, const std::vector<float>& logits) {
  params.seed = 7;
  Sampler sampler = make_sampler(params, static_cast<int32_t>(logits.size()));
  std::set<int32_t> seen;
  for (int i = 0; i < 3000; ++i) seen.insert(sample_token(sampler, logits));
  return seen;
}

// How often each token comes out of `n` draws of a sampler with `params`.
std::vector<int> draw_counts(const SamplingParams& params, const std::vector<float>& logits, int n) {
  Sampler sampler = make_sampler(params, static_cast<int32_t>(logits.size()));
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[static_cast<size_t>(sample_token(sampler, logits))];
  return counts;
}

std::set<int32_t> tokens_of(const CandidateList& list) {
  std::set<int32_t> tokens;
  for (const Candidate& c : list.items) tokens.insert(c.token);
  return tokens;
}

// A candidate list over `logits` in id order, as the sampler builds it.
struct Candidates {
  explicit Candidates(const std::vector<float>& logits) {
    for (size_t i = 0; i < logits.size(); ++i)
      storage.push_back({static_cast<int32_t>(i), logits[i]});
  }
  CandidateList list() { return {std::span<Candidate>(storage), false}; }
  std::vector<Candidate> storage;
};

TEST(Sampler, GreedyPicksTheArgmaxAndTheLowerIdOnTies) {
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler sampler = make_sampler(params, 5);
  EXPECT_EQ(sample_token(sampler, {0.5f, 2.0f, -1.0f, 1.9f, 1.99f}), 1);
  EXPECT_EQ(sample_token(sampler, {-3.0f, -2.0f, -1.0f, -1.0f, -4.0f}), 2);
  const std::vector<float> logits = random_logits(5000, 1);
  Sampler big = make_sampler(params, 5000);
  const auto argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
  EXPECT_EQ(sample_token(big, logits), argmax);
}

// argmax_logit (the greedy sampler's path when nothing changes the logits) against
// best_index over the candidate list: every length around the vector width, ties (coarse
// values), infinities, signed zeros and NaNs anywhere.
TEST(SamplerStages, ArgmaxLogitRanksAsBestIndex) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> value(-3, 3), special(0, 9);
  for (int trial = 0; trial < 4000; ++trial) {
    const size_t n = 1 + static_cast<size_t>(trial % 40);
    std::vector<float> logits(n);
    for (float& x : logits) {
      const int kind = special(rng);
      x = kind == 0 ? NAN : kind == 1 ? -INFINITY : kind == 2 ? -0.0f : static_cast<float>(value(rng));
    }
    if (trial % 7 == 0) logits[static_cast<size_t>(trial) % n] = INFINITY;
    Candidates candidates(logits);
    ASSERT_EQ(argmax_logit(logits), best_index(candidates.list())) << "trial " << trial;
  }
  const std::vector<float> big = random_logits(49152, 3);
  Candidates candidates(big);
  EXPECT_EQ(argmax_logit(big), best_index(candidates.list()));
  EXPECT_EQ(argmax_logit(std::vector<float>{NAN, 1.0f, 2.0f}), 0u);  // the caller refuses it
}

// Temperature alone (no truncation, bias or penalty) draws straight from the logits'
// softmax: over a vocabulary wide enough for the vector weights, a few likely tokens
// among many unlikely ones come out as often as their probabilities say.
TEST(Sampler, TemperatureAloneDrawsFromTheSoftmaxOfAWideVocabulary) {
  std::vector<float> logits(5000, -4.0f);
  logits[7] = 2.0f;
  logits[1234] = 1.0f;
  logits[4999] = 0.5f;
  const float temperature = 0.8f;
  SamplingParams params;
  params.temperature = temperature;
  params.seed = 21;
  const int n = 20000;
  const std::vector<int> counts = draw_counts(params, logits, n);
  double total = 0.0;
  for (float x : logits) total += std::exp(double(x) / temperature);
  int rest = n;
  for (const size_t t : {size_t{7}, size_t{1234}, size_t{4999}}) {
    EXPECT_NEAR(counts[t] / double(n), std::exp(double(logits[t]) / temperature) / total, 0.015) << "token " << t;
    rest -= counts[t];
  }
  EXPECT_NEAR(rest / double(n), 4997 * std::exp(-4.0 / temperature) / total, 0.015);
}

TEST(SamplerStages, DrawIndexWalksTheRunningSum) {
  const std::vector<float> weights = {0.0f, 1.0f, 2.0f, 1.0f, 0.0f};
  EXPECT_EQ(draw_index(weights, 4.0, 0.0), 1u);
  EXPECT_EQ(draw_index(weights, 4.0, 0.2499), 1u);
  EXPECT_EQ(draw_index(weights, 4.0, 0.25), 2u);
  EXPECT_EQ(draw_index(weights, 4.0, 0.76), 3u);
  EXPECT_EQ(draw_index(weights, 4.5, 0.99), 3u);  // a total a hair high: the last token with weight
}

TEST(Sampler, SameSeedGivesTheSameTokensAndAnotherSeedDoesNot) {
  const std::vector<float> logits = random_logits(300, 2, 1.0f);
  auto draw = [&](uint64_t seed) {
    SamplingParams params;
    params.temperature = 1.0f;
    params.seed = seed;
    Sampler sampler = make_sampler(params, 300);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 200; ++i) tokens.push_back(sample_token(sampler, logits));
    return tokens;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
  EXPECT_NE(draw(42), draw(42 + (uint64_t{1} << 32)));  // the seed's high half counts too
}

TEST(Sampler, TopKOfOneIsGreedy) {
  SamplingParams params;
  params.temperature = 1.5f;
  params.top_k = 1;
  params.seed = 3;
  Sampler sampler = make_sampler(params, 1000);
  for (uint32_t trial = 0; trial < 50; ++trial) {
    const std::vector<float> logits = random_logits(1000, 100 + trial);
    const auto argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
    EXPECT_EQ(sample_token(sampler, logits), argmax);
  }
}

TEST(SamplerStages, TopKKeepsTheKBestSorted) {
  Candidates candidates({0.1f, 3.0f, -2.0f, 2.0f, 2.5f, 0.0f});
  CandidateList list = candidates.list();
  apply_top_k(list, 3);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_TRUE(list.sorted);
  EXPECT_EQ(list.items[0].token, 1);
  EXPECT_EQ(list.items[1].token, 4);
  EXPECT_EQ(list.items[2].token, 3);
}

TEST(SamplerStages, TopPKeepsTheShortestHeadReachingP) {
  // Probabilities 0.0625, 0.5, 0.125, 0.25, 0.0625 (shuffled so sorting matters).
  const std::vector<float> logits = logits_of({0.0625, 0.5, 0.125, 0.25, 0.0625});
  auto kept = [&](float p) {
    Candidates candidates(logits);
    CandidateList list = candidates.list();
    std::vector<float> scratch(logits.size());
    apply_top_p(list, p, scratch);
    return tokens_of(list);
  };
  EXPECT_EQ(kept(0.3f), (std::set<int32_t>{1}));
  EXPECT_EQ(kept(0.7f), (std::set<int32_t>{1, 3}));
  EXPECT_EQ(kept(0.8f), (std::set<int32_t>{1, 3, 2}));
  EXPECT_EQ(kept(0.9f), (std::set<int32_t>{0, 1, 2, 3}));  // ties: lower id first
  EXPECT_EQ(kept(1.0f), (std::set<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(kept(0.0f), (std::set<int32_t>{1}));  // at least one token
}

TEST(SamplerStages, TopPSortsPastTheFirstHeadOnALargeVocabulary) {
  // 1000 equal logits: p = 0.5 needs exactly the 500 lowest ids.
  Candidates candidates(std::vector<float>(1000, 1.0f));
  CandidateList list = candidates.list();
  std::vector<float> scratch(1000);
  apply_top_p(list, 0.5f + 1e-4f, scratch);
  ASSERT_EQ(list.items.size(), 501u);
  for (size_t i = 0; i < list.items.size(); ++i)
    EXPECT_EQ(list.items[i].token, static_cast<int32_t>(i));
}

TEST(SamplerStages, MinPKeepsTokensAboveAFractionOfTheBest) {
  const std::vector<float> logits = logits_of({0.1, 0.4, 0.05, 0.3, 0.15});
  auto kept = [&](float min_p) {
    Candidates candidates(logits);
    CandidateList list = candidates.list();
    apply_min_p(list, min_p);
    return tokens_of(list);
  };
  EXPECT_EQ(kept(0.3f), (std::set<int32_t>{1, 3, 4}));     // threshold 0.12
  EXPECT_EQ(kept(0.2f), (std::set<int32_t>{0, 1, 3, 4}));  // threshold 0.08
  EXPECT_EQ(kept(0.9f), (std::set<int32_t>{1}));
  EXPECT_EQ(kept(0.0f), (std::set<int32_t>{0, 1, 2, 3, 4}));
}

TEST(Sampler, TruncationLimitsWhatIsDrawn) {
  const std::vector<float> logits = logits_of({0.0625, 0.5, 0.125, 0.25, 0.0625});
  SamplingParams params;
  params.top_p = 0.8f;
  EXPECT_EQ(drawn_tokens(params, logits), (std::set<int32_t>{1, 2, 3}));
  params.top_p = 1.0f;
  params.min_p = 0.3f;  // keeps p >= 0.15
  EXPECT_EQ(drawn_tokens(params, logits), (std::set<int32_t>{1, 3}));
  params.min_p = 0.0f;
  params.top_k = 2;
  EXPECT_EQ(drawn_tokens(params, logits), (std::set<int32_t>{1, 3}));
  params.top_k = 0;
  EXPECT_EQ(drawn_tokens(params, logits), (std::set<int32_t>{0, 1, 2, 3, 4}));
}

TEST(Sampler, DrawsFollowTheTemperedDistribution) {
  // p = (0.6, 0.3, 0.1) at temperature 1; at temperature 2 it is proportional to sqrt(p).
  const std::vector<float> logits = logits_of({0.6, 0.3, 0.1});
  for (float temperature : {1.0f, 2.0f}) {
    SamplingParams params;
    params.temperature = temperature;
    params.seed = 11;
    const int n = 20000;
    const std::vector<int> counts = draw_counts(params, logits, n);
    double expected[3], total = 0.0;
    for (int t = 0; t < 3; ++t)
      total += expected[t] = std::pow(std::exp(logits[t]), 1.0 / temperature);
    for (int t = 0; t < 3; ++t) {
      EXPECT_NEAR(counts[static_cast<size_t>(t)] / double(n), expected[t] / total, 0.015)
          << "token " << t << " at temperature " << temperature;
    }
  }
}

TEST(Penalties, RepetitionCoversTheLastWindowTokensPromptIncluded) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  params.repetition_window = 3;
  Penalties penalties(params, 6);
  const int32_t prompt[] = {1, 2, 3, 4};
  for (int32_t token : prompt) penalties.accept(token, false);
  Candidates candidates({1.0f, 1.0f, 4.0f, -1.0f, 0.0f, 3.0f});
  penalties.apply(candidates.storage);
  // Window {2, 3, 4}: token 1 left it. Positive logits halve, negative ones double.
  const std::vector<float> expected = {1.0f, 1.0f, 2.0f, -2.0f, 0.0f, 3.0f};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(candidates.storage[i].logit, expected[i]) << i;

  penalties.accept(2, true);  // window {3, 4, 2}: still once per token, however often seen
  penalties.accept(2, true);  // window {4, 2, 2}: 3 left
  Candidates again({1.0f, 1.0f, 4.0f, -1.0f, 6.0f, 3.0f});
  penalties.apply(again.storage);
  const std::vector<float> expected_again = {1.0f, 1.0f, 2.0f, -1.0f, 3.0f, 3.0f};
  for (size_t i = 0; i < expected_again.size(); ++i)
    EXPECT_EQ(again.storage[i].logit, expected_again[i]) << i;
}

TEST(Penalties, WholeSequenceWindowNeverForgets) {
  SamplingParams params;
  params.repetition_penalty = 4.0f;
  params.repetition_window = -1;
  Penalties penalties(params, 3);
  for (int i = 0; i < 100; ++i) penalties.accept(i == 0 ? 0 : 1, false);
  Candidates candidates({8.0f, 8.0f, 8.0f});
  penalties.apply(candidates.storage);
  EXPECT_EQ(candidates.storage[0].logit, 2.0f);
  EXPECT_EQ(candidates.storage[1].logit, 2.0f);
  EXPECT_EQ(candidates.storage[2].logit, 8.0f);
}

TEST(Penalties, PresenceAndFrequencyCountGeneratedTokensOnly) {
  SamplingParams params;
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  Penalties penalties(params, 5);
  penalties.accept(0, false);  // prompt: not counted
  for (int32_t token : {1, 2, 2, 2, 4}) penalties.accept(token, true);
  Candidates candidates({1.0f, 1.0f, 1.0f, 1.0f, -1.0f});
  penalties.apply(candidates.storage);
  // logit -= count * 0.25 + 0.5 for generated tokens.
  const std::vector<float> expected = {1.0f, 0.25f, -0.25f, 1.0f, -1.75f};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(candidates.storage[i].logit, expected[i]) << i;
}

TEST(Sampler, PenaltiesAndBiasChangeTheGreedyChoice) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.frequency_penalty = 1.0f;
  Sampler sampler = make_sampler(params, 3);
  const std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  EXPECT_EQ(sample_token(sampler, logits), 0);
  sampler.accept(0);
  EXPECT_EQ(sample_token(sampler, logits), 1);  // 2 - 1 < 1.5

  params.frequency_penalty = 0.0f;
  params.logit_bias = {{2, 2.5f}};
  Sampler biased = make_sampler(params, 3);
  EXPECT_EQ(sample_token(biased, logits), 2);
  params.logit_bias = {{0, -INFINITY}};
  Sampler banned = make_sampler(params, 3);
  EXPECT_EQ(sample_token(banned, logits), 1);
}

TEST(Sampler, ABannedTokenIsNeverDrawn) {
  SamplingParams params;
  params.logit_bias = {{1, -INFINITY}};
  const std::vector<float> logits = logits_of({0.2, 0.6, 0.2});
  EXPECT_EQ(drawn_tokens(params, logits), (std::set<int32_t>{0, 2}));
}

TEST(Sampler, LogprobsAreTheLogSoftmaxOfTheRawLogits) {
  const std::vector<float> logits = random_logits(2000, 5, 4.0f);
  double max = -INFINITY, sum = 0.0;
  for (float x : logits) max = std::max(max, double(x));
  for (float x : logits) sum += std::exp(double(x) - max);
  auto reference = [&](size_t id) { return double(logits[id]) - max - std::log(sum); };

  SamplingParams params;
  params.temperature = 0.7f;  // and a bias: neither changes the reported log-probabilities
  params.logit_bias = {{17, 5.0f}};
  params.logprobs = true;
  params.top_logprobs = 5;
  params.seed = 9;
  Sampler sampler = make_sampler(params, 2000);
  Expected<SampledToken> sampled = sampler.sample(logits);
  ASSERT_TRUE(sampled.ok());
  EXPECT_FLOAT_EQ(sampled->logprob, float(reference(size_t(sampled->token))));

  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  ASSERT_EQ(sampled->top.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sampled->top[i].token, static_cast<int32_t>(order[i]));
    EXPECT_FLOAT_EQ(sampled->top[i].logprob, float(reference(order[i])));
  }
}

TEST(Sampler, RejectsBadParamsAndInputs) {
  SamplingParams params;
  params.top_p = 1.5f;
  EXPECT_FALSE(Sampler::create(params, 10).ok());
  params = {};
  params.temperature = NAN;
  EXPECT_FALSE(Sampler::create(params, 10).ok());
  params = {};
  params.logit_bias = {{10, 1.0f}};
  Expected<Sampler> out_of_vocab = Sampler::create(params, 10);
  ASSERT_FALSE(out_of_vocab.ok());
  EXPECT_EQ(out_of_vocab.status().message(),
            "logit_bias names token 10, outside the vocabulary of 10");
  params = {};
  params.repetition_penalty = 0.0f;
  EXPECT_FALSE(Sampler::create(params, 10).ok());
  params = {};
  params.top_logprobs = 11;
  EXPECT_FALSE(Sampler::create(params, 10).ok());
  EXPECT_FALSE(Sampler::create({}, 0).ok());

  params = {};
  params.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
  Sampler sampler = make_sampler(params, 2);
  EXPECT_FALSE(sampler.sample(std::vector<float>{1.0f, 2.0f}).ok());        // everything banned
  EXPECT_FALSE(sampler.sample(std::vector<float>{1.0f, 2.0f, 3.0f}).ok());  // wrong size
}

// A token bitmask of `n_vocab` tokens with `allowed` set.
std::vector<uint32_t> mask_of(int32_t n_vocab, std::initializer_list<int32_t> allowed) {
  std::vector<uint32_t> mask(static_cast<size_t>((n_vocab + 31) / 32), 0u);
  for (int32_t token : allowed) mask[static_cast<size_t>(token / 32)] |= 1u << (token % 32);
  return mask;
}

TEST(SamplerMask, GreedyTakesTheBestAllowedToken) {
  const std::vector<float> logits = random_logits(100, 3);
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler sampler = make_sampler(params, 100);
  const std::vector<uint32_t> mask = mask_of(100, {5, 40, 77, 99});
  Expected<SampledToken> sampled = sampler.sample(logits, mask);
  ASSERT_TRUE(sampled.ok()) << sampled.status().message();
  int32_t best = 5;
  for (int32_t token : {40, 77, 99}) {
    if (logits[static_cast<size_t>(token)] > logits[static_cast<size_t>(best)]) best = token;
  }
  EXPECT_EQ(sampled->token, best);
}

TEST(SamplerMask, EveryStageDrawsOnlyAllowedTokens) {
  const std::vector<float> logits = random_logits(70, 9, 1.0f);
  const std::vector<uint32_t> mask = mask_of(70, {0, 31, 32, 33, 69});
  SamplingParams plain;
  SamplingParams truncated;
  truncated.top_k = 3;
  truncated.top_p = 0.9f;
  SamplingParams biased;
  biased.logit_bias = {{31, 50.0f}, {1, 100.0f}};  // 1 is banned by the mask whatever its bias
  biased.frequency_penalty = 0.5f;
  for (SamplingParams params : {plain, truncated, biased}) {
    params.seed = 4;
    Sampler sampler = make_sampler(params, 70);
    std::set<int32_t> seen;
    for (int i = 0; i < 2000; ++i) {
      Expected<SampledToken> sampled = sampler.sample(logits, mask);
      ASSERT_TRUE(sampled.ok()) << sampled.status().message();
      seen.insert(sampled->token);
    }
    for (int32_t token : seen) EXPECT_TRUE(token == 0 || token == 31 || token == 32 || token == 33 || token == 69) << token;
  }
  // Without truncation or bias, the draw is softmax over the allowed tokens: all show up.
  SamplingParams params;
  params.seed = 5;
  Sampler sampler = make_sampler(params, 70);
  std::set<int32_t> seen;
  for (int i = 0; i < 4000; ++i) seen.insert(sampler.sample(logits, mask)->token);
  EXPECT_EQ(seen, (std::set<int32_t>{0, 31, 32, 33, 69}));
}

TEST(SamplerMask, LogprobsAreThoseOfTheRawLogits) {
  const std::vector<float> logits = logits_of({0.5, 0.25, 0.125, 0.125});
  SamplingParams params;
  params.temperature = 0.0f;
  params.logprobs = true;
  params.top_logprobs = 2;
  Sampler sampler = make_sampler(params, 4);
  Expected<SampledToken> sampled = sampler.sample(logits, mask_of(4, {2}));
  ASSERT_TRUE(sampled.ok());
  EXPECT_EQ(sampled->token, 2);
  EXPECT_NEAR(sampled->logprob, std::log(0.125), 1e-6);
  ASSERT_EQ(sampled->top.size(), 2u);
  EXPECT_EQ(sampled->top[0].token, 0);  // the model's favourite, banned by the mask
  EXPECT_NEAR(sampled->top[0].logprob, std::log(0.5), 1e-6);
}

TEST(SamplerMask, AMaskThatBansEverythingIsAnError) {
  SamplingParams params;
  Sampler sampler = make_sampler(params, 40);
  const Expected<SampledToken> sampled = sampler.sample(random_logits(40, 1), mask_of(40, {}));
  ASSERT_FALSE(sampled.ok());
  EXPECT_EQ(sampled.status().message(),
            "sampler: no token has a finite logit (all banned by the bias or the grammar, or NaN)");
  const std::vector<uint32_t> short_mask(1, ~0u);
  const Expected<SampledToken> short_one = sampler.sample(random_logits(40, 1), short_mask);
  ASSERT_FALSE(short_one.ok());
  EXPECT_EQ(short_one.status().message(), "sampler: a token mask of 1 words for a vocabulary of 40");
}

}  // namespace
}  // namespace pagoda::engine
