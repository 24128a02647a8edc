// RequestProcessor: one request's sampling, streaming text, stop checks, finish reasons
// and log-probabilities, step by step, on stories260K's vocabulary.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/request_processor.h"
#include "engine_test_util.h"

namespace pagoda::engine {
namespace {

StopConditions stop_after(int32_t max_tokens, std::vector<std::string> stop_strings = {},
                          bool ignore_eog = false) {
  StopConditions stop;
  stop.max_tokens = max_tokens;
  stop.stop_strings = std::move(stop_strings);
  stop.ignore_eog = ignore_eog;
  return stop;
}

class RequestProcessorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = testing::load_batched_model("stories260K.gguf", {});
    ASSERT_TRUE(m_.tokenizer);
    // "Once upon a time": BOS, then the story's first tokens.
    story_ =
        m_.tokenizer->encode("Once upon a time", /*add_special=*/true, /*parse_special=*/false);
    ASSERT_GE(story_.size(), 5u);
  }

  RequestProcessor make(const StopConditions& stop, const SamplingParams& sampling = greedy()) {
    Expected<RequestProcessor> p =
        RequestProcessor::create(7, std::span(story_).first(1), sampling, stop, *m_.tokenizer);
    EXPECT_TRUE(p.ok()) << p.status().message();
    return std::move(p).value();
  }
  static SamplingParams greedy() {
    SamplingParams s;
    s.temperature = 0.0f;
    return s;
  }
  // Logits whose best token is `token`.
  std::vector<float> pointing_at(int32_t token) const {
    std::vector<float> logits(static_cast<size_t>(m_.tokenizer->n_vocab()), 0.0f);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 7) * 0.25f;
    logits[static_cast<size_t>(token)] = 5.0f;
    return logits;
  }
  RequestOutput step(RequestProcessor& p, int32_t token, bool context_full = false) {
    Expected<RequestOutput> out = p.process(pointing_at(token), context_full);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? std::move(out).value() : RequestOutput{};
  }

  testing::BatchedModel m_;
  std::vector<int32_t> story_;
};

TEST_F(RequestProcessorTest, StreamsTokensAndTextUntilMaxTokens) {
  RequestProcessor p = make(stop_after(3));
  const RequestOutput first = step(p, story_[1]);
  EXPECT_EQ(first.id, 7u);
  EXPECT_EQ(first.new_tokens, std::vector<int32_t>{story_[1]});
  EXPECT_EQ(first.text, "Once");  // after a BOS-only prompt the leading space goes
  EXPECT_EQ(first.finish, FinishReason::kNone);
  EXPECT_EQ(first.n_prompt_tokens, 1);
  EXPECT_EQ(first.n_generated_tokens, 1);
  EXPECT_TRUE(first.logprobs.empty());
  EXPECT_EQ(step(p, story_[2]).text, " upon");
  const RequestOutput last = step(p, story_[3]);
  EXPECT_EQ(last.text, " a");
  EXPECT_EQ(last.finish, FinishReason::kLength);
  EXPECT_EQ(last.n_generated_tokens, 3);
}

TEST_F(RequestProcessorTest, AStopStringEndsTheTextRightBeforeIt) {
  RequestProcessor p = make(stop_after(10, {"upon"}));
  EXPECT_EQ(step(p, story_[1]).text, "Once");
  const RequestOutput stopped = step(p, story_[2]);
  EXPECT_EQ(stopped.text, " ");
  EXPECT_EQ(stopped.finish, FinishReason::kStop);
}

TEST_F(RequestProcessorTest, AnEndOfGenerationTokenStopsWithoutText) {
  RequestProcessor p = make(stop_after(10));
  step(p, story_[1]);
  const RequestOutput stopped = step(p, m_.tokenizer->eos());
  EXPECT_EQ(stopped.new_tokens, std::vector<int32_t>{m_.tokenizer->eos()});
  EXPECT_EQ(stopped.text, "");
  EXPECT_EQ(stopped.finish, FinishReason::kStop);

  RequestProcessor ignoring = make(stop_after(10, {}, /*ignore_eog=*/true));
  EXPECT_EQ(step(ignoring, m_.tokenizer->eos()).finish, FinishReason::kNone);
}

// A full context ends the request with "length", releasing text held for a stop string.
TEST_F(RequestProcessorTest, AFullContextEndsWithLengthAndReleasesHeldText) {
  RequestProcessor p = make(stop_after(10, {"upon a"}));
  EXPECT_EQ(step(p, story_[1]).text, "Once");
  EXPECT_EQ(step(p, story_[2]).text, " ");  // "upon" may start "upon a": held
  const RequestOutput last = step(p, story_[4], /*context_full=*/true);
  EXPECT_EQ(last.finish, FinishReason::kLength);
  tokenizer::DecodeOptions continuing;
  continuing.strip_leading_space = false;
  EXPECT_EQ(last.text, "upon" + m_.tokenizer->decode(std::span(story_).subspan(4, 1), continuing));
}

TEST_F(RequestProcessorTest, AbortReleasesHeldTextAndCarriesTheError) {
  RequestProcessor p = make(stop_after(10, {"upon a"}));
  step(p, story_[1]);
  EXPECT_EQ(step(p, story_[2]).text, " ");
  const RequestOutput aborted = p.abort("client went away");
  EXPECT_EQ(aborted.text, "upon");
  EXPECT_EQ(aborted.finish, FinishReason::kAbort);
  EXPECT_EQ(aborted.error, "client went away");
  EXPECT_TRUE(aborted.new_tokens.empty());
  EXPECT_EQ(aborted.n_generated_tokens, 2);
}

TEST_F(RequestProcessorTest, ReportsLogprobsWhenAsked) {
  SamplingParams sampling = greedy();
  sampling.logprobs = true;
  sampling.top_logprobs = 2;
  RequestProcessor p = make(stop_after(10), sampling);
  const std::vector<float> logits = pointing_at(story_[1]);
  Expected<RequestOutput> out = p.process(logits, false);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->logprobs.size(), 1u);
  const TokenLogprobs& lp = out->logprobs[0];
  double sum = 0.0;
  for (const float x : logits) sum += std::exp(static_cast<double>(x) - 5.0);
  const auto expected = static_cast<float>(-std::log(sum));
  EXPECT_EQ(lp.token, story_[1]);
  EXPECT_FLOAT_EQ(lp.logprob, expected);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].token, story_[1]);
  EXPECT_FLOAT_EQ(lp.top[0].logprob, expected);
  EXPECT_EQ(lp.top[1].token, 6);  // 6 % 7 * 0.25 = 1.5: the best of the rest, lowest id
}

TEST_F(RequestProcessorTest, RefusesParametersOutOfRange) {
  SamplingParams bad = greedy();
  bad.top_p = 2.0f;
  EXPECT_FALSE(RequestProcessor::create(1, story_, bad, {}, *m_.tokenizer).ok());
  EXPECT_FALSE(RequestProcessor::create(1, story_, greedy(), stop_after(0), *m_.tokenizer).ok());
  EXPECT_FALSE(
      RequestProcessor::create(1, story_, greedy(), stop_after(10, {""}), *m_.tokenizer).ok());
}

TEST_F(RequestProcessorTest, ASamplerFailureIsAnError) {
  SamplingParams banned = greedy();
  for (int32_t t = 0; t < m_.tokenizer->n_vocab(); ++t) banned.logit_bias.push_back({t, -INFINITY});
  RequestProcessor p = make(stop_after(10), banned);
  EXPECT_FALSE(p.process(pointing_at(5), false).ok());
}

TEST_F(RequestProcessorTest, SampleThenEmitIsProcessInTwoHalves) {
  RequestProcessor halves = make(stop_after(2)), whole = make(stop_after(2));
  // emit() with nothing sampled is refused and changes nothing.
  const Expected<RequestOutput> early = halves.emit(false);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().message(), "request processor: no sampled token to emit");
  for (int i = 1; i <= 2; ++i) {
    ASSERT_TRUE(halves.sample(pointing_at(story_[i])).ok());
    const Expected<RequestOutput> a = halves.emit(false);
    const RequestOutput b = step(whole, story_[i]);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(a->new_tokens, b.new_tokens);
    EXPECT_EQ(a->text, b.text);
    EXPECT_EQ(a->finish, b.finish);
    EXPECT_EQ(a->n_generated_tokens, b.n_generated_tokens);
    EXPECT_FALSE(halves.emit(false).ok()) << "a token emitted twice";
  }
  EXPECT_EQ(halves.n_generated(), 2);
}

TEST_F(RequestProcessorTest, AFailedSampleLeavesNothingToEmit) {
  RequestProcessor p = make(stop_after(4));
  ASSERT_TRUE(p.sample(pointing_at(story_[1])).ok());
  const std::vector<float> no_finite(static_cast<size_t>(m_.tokenizer->n_vocab()), -INFINITY);
  EXPECT_FALSE(p.sample(no_finite).ok());  // the earlier, unemitted token is dropped too
  EXPECT_FALSE(p.emit(false).ok());
  EXPECT_EQ(p.n_generated(), 0);
}

}  // namespace
}  // namespace pagoda::engine
