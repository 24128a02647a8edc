// A plain temperature draw made where the logits are (core/draw.h's draw_token, which the
// backends' draw_rows ops make) is the token the sampler itself takes: for every seed the
// same uniform gives the same token, over vocabularies of 1 to 49152, temperatures from
// 0.1 to 2.5 and logits with -inf entries. And Sampler::only_draw admits exactly the
// requests whose next token is such a draw.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/draw.h"
#include "engine/sampler.h"

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

TEST(DeviceDraw, DrawTokenIsTheSamplersToken) {
  for (const int32_t n : {1, 7, 300, 49152}) {
    for (const float temperature : {0.1f, 0.8f, 1.0f, 2.5f}) {
      const std::vector<float> logits = logits_for(n, static_cast<uint32_t>(n), 3.0f);
      SamplingParams params;
      params.temperature = temperature;
      params.seed = 1234 + static_cast<uint64_t>(n);
      Sampler host = make_sampler(params, n), twin = make_sampler(params, n);
      ASSERT_TRUE(host.only_draw());
      std::vector<float> scratch(static_cast<size_t>(n));
      for (int i = 0; i < 300; ++i) {
        Expected<SampledToken> sampled = host.sample(logits);
        ASSERT_TRUE(sampled.ok()) << sampled.status().message();
        const int32_t drawn = draw_token(logits, temperature, twin.draw_uniform(), scratch);
        ASSERT_EQ(drawn, sampled->token) << "n " << n << ", temperature " << temperature << ", draw " << i;
      }
    }
  }
}

TEST(DeviceDraw, NoTokenWhereNoLogitIsFinite) {
  std::vector<float> scratch(4);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(draw_token(std::vector<float>{-inf, -inf, -inf, -inf}, 1.0f, 0.5, scratch), -1);
  EXPECT_EQ(draw_token(std::vector<float>{nan, 1.0f, 2.0f, 3.0f}, 1.0f, 0.5, scratch), -1);
  EXPECT_EQ(draw_token(std::vector<float>{-inf, -inf, 0.0f, -inf}, 1.0f, 0.999, scratch), 2);
}

TEST(DeviceDraw, OnlyDrawAdmitsPlainTemperatureDrawsAlone) {
  const auto only_draw = [](const SamplingParams& params) { return make_sampler(params, 100).only_draw(); };
  SamplingParams plain;
  plain.temperature = 0.7f;
  EXPECT_TRUE(only_draw(plain));
  SamplingParams p = plain;
  p.temperature = 0.0f;
  EXPECT_FALSE(only_draw(p)) << "greedy";
  p = plain, p.top_k = 5;
  EXPECT_FALSE(only_draw(p)) << "top-k";
  p = plain, p.top_k = 100;
  EXPECT_TRUE(only_draw(p)) << "a top-k of the whole vocabulary truncates nothing";
  p = plain, p.top_p = 0.9f;
  EXPECT_FALSE(only_draw(p)) << "top-p";
  p = plain, p.min_p = 0.05f;
  EXPECT_FALSE(only_draw(p)) << "min-p";
  p = plain, p.logit_bias = {{3, 1.0f}};
  EXPECT_FALSE(only_draw(p)) << "bias";
  p = plain, p.presence_penalty = 0.5f;
  EXPECT_FALSE(only_draw(p)) << "penalty";
  p = plain, p.logprobs = true;
  EXPECT_FALSE(only_draw(p)) << "log-probabilities";
}

}  // namespace
}  // namespace pagoda::engine
