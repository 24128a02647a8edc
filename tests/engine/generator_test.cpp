#include "engine/generator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "stories_fixture.h"

namespace pagoda::engine {
namespace {

using testing::kShared;
using testing::load_shared_model;
using testing::make_generator;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

GenerationRequest greedy_request(std::span<const int32_t> prompt, int32_t max_tokens) {
  GenerationRequest request;
  request.prompt = prompt;
  request.sampling.temperature = 0.0f;
  request.stop.max_tokens = max_tokens;
  return request;
}

GenerationResult generate_or_fail(Generator& generator, const GenerationRequest& request,
                                  const Generator::TextCallback& on_text = nullptr) {
  Expected<GenerationResult> result = generator.generate(request, on_text);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : GenerationResult{};
}

class StoriesGenerator : public ::testing::Test {
 protected:
  void SetUp() override {
    loaded_ = load_shared_model("stories260K.gguf");
    ASSERT_TRUE(loaded_.model && loaded_.tokenizer);
  }
  std::vector<int32_t> encode(const std::string& text) const {
    return loaded_.tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/false);
  }
  testing::LoadedStories loaded_;
};

// The reference: BOS only, greedy, 256 steps, the text without its first leading space
// (which a BOS-only prompt drops), the file ending with a newline.
TEST_F(StoriesGenerator, GreedyFromBosReproducesTheReferenceText) {
  testing::GeneratorWithCache g = make_generator(loaded_, 512);
  ASSERT_TRUE(g.generator);
  const std::vector<int32_t> prompt = {loaded_.tokenizer->bos()};
  std::string streamed;
  const GenerationResult result =
      generate_or_fail(*g.generator, greedy_request(prompt, 256),
                       [&](std::string_view delta) { streamed += delta; });
  EXPECT_EQ(result.tokens.size(), 256u);
  EXPECT_EQ(result.finish, FinishReason::kLength);
  EXPECT_EQ(result.text + "\n", read_text(kShared + "/reference/stories260K-greedy.txt"));
  EXPECT_EQ(streamed, result.text);
  EXPECT_EQ(result.timings.n_prompt_tokens, 1);
  EXPECT_EQ(result.timings.n_decoded, 255);
}

// Each reference case: the prompt's tokens, then greedy tokens and text step by step.
TEST_F(StoriesGenerator, GreedyContinuationsMatchTheReferenceSteps) {
  const nlohmann::json reference =
      nlohmann::json::parse(read_text(kShared + "/reference/generation/stories260K.json"));
  testing::GeneratorWithCache g = make_generator(loaded_, 512);
  ASSERT_TRUE(g.generator);
  for (const nlohmann::json& c : reference["cases"]) {
    const std::vector<int32_t> prompt = encode(c["prompt"].get<std::string>());
    ASSERT_EQ(prompt, c["prompt_tokens"].get<std::vector<int32_t>>());
    std::vector<int32_t> expected_tokens;
    for (const nlohmann::json& step : c["steps"])
      expected_tokens.push_back(step["token"].get<int32_t>());
    const GenerationResult result = generate_or_fail(
        *g.generator, greedy_request(prompt, static_cast<int32_t>(expected_tokens.size())));
    EXPECT_EQ(result.tokens, expected_tokens) << c["prompt"];
    EXPECT_EQ(result.text, c["text"].get<std::string>()) << c["prompt"];
  }
}

// The sampler's log-probabilities on real logits: the reference's top 8 of each step
// (natural log of the softmax of the raw logits), for the first steps of each case. The
// model's numerics are held to tighter bounds by test_model; this checks the convention
// (raw logits, natural log), which any other choice (tempered, base 2) would miss by far
// more than the tolerance.
TEST_F(StoriesGenerator, LogprobsMatchTheReferenceSteps) {
  constexpr double kLogprobTolerance = 1e-2;
  const nlohmann::json reference =
      nlohmann::json::parse(read_text(kShared + "/reference/generation/stories260K.json"));
  const model::ModelConfig& config = loaded_.model->config();
  Expected<std::unique_ptr<backend::KvStorage>> kv =
      loaded_.backend->allocate_kv(contiguous_kv_shape(config, 128));
  ASSERT_TRUE(kv.ok());
  SamplingParams params;
  params.temperature = 0.0f;
  params.logprobs = true;
  params.top_logprobs = 8;
  std::vector<float> logits(static_cast<size_t>(config.n_vocab));
  for (const nlohmann::json& c : reference["cases"]) {
    std::vector<int32_t> tokens = c["prompt_tokens"].get<std::vector<int32_t>>();
    Expected<Sampler> sampler = Sampler::create(params, config.n_vocab);
    ASSERT_TRUE(sampler.ok());
    ContiguousSequence sequence((*kv)->shape());
    size_t fed = 0;
    for (size_t step = 0; step < 4 && step < c["steps"].size(); ++step) {
      const std::span<const int32_t> fresh = std::span<const int32_t>(tokens).subspan(fed);
      ASSERT_TRUE(
          loaded_.model
              ->forward(sequence.batch(fresh, static_cast<int32_t>(fed), true), **kv, logits)
              .ok());
      fed = tokens.size();
      const Expected<SampledToken> sampled = sampler->sample(logits);
      ASSERT_TRUE(sampled.ok());
      const nlohmann::json& expected = c["steps"][step];
      ASSERT_EQ(sampled->token, expected["token"].get<int32_t>());
      ASSERT_EQ(sampled->top.size(), 8u);
      int shared = 0;
      for (const nlohmann::json& entry : expected["top"]) {
        for (const TokenLogprob& ours : sampled->top) {
          if (ours.token != entry[0].get<int32_t>()) continue;
          ++shared;
          EXPECT_NEAR(ours.logprob, entry[1].get<double>(), kLogprobTolerance)
              << c["prompt"] << " step " << step;
        }
      }
      EXPECT_GE(shared, 7) << c["prompt"] << " step " << step;  // near-ties at the tail may swap
      EXPECT_EQ(sampled->logprob, sampled->top[0].logprob);     // greedy takes the most likely
      tokens.push_back(sampled->token);
    }
  }
}

TEST_F(StoriesGenerator, ChunkedPrefillGivesTheSameTokens) {
  const std::vector<int32_t> prompt =
      encode("Once upon a time, a little dog named Max went to the park");
  ASSERT_GT(prompt.size(), 7u);
  testing::GeneratorWithCache whole = make_generator(loaded_, 256);
  testing::GeneratorWithCache chunked = make_generator(loaded_, 256, /*max_batch_tokens=*/3);
  const GenerationResult a = generate_or_fail(*whole.generator, greedy_request(prompt, 24));
  const GenerationResult b = generate_or_fail(*chunked.generator, greedy_request(prompt, 24));
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.text, b.text);
}

TEST_F(StoriesGenerator, AnExtendedPromptReusesTheCachedPrefix) {
  testing::GeneratorWithCache g = make_generator(loaded_, 256);
  const std::vector<int32_t> first = encode("Once upon a time");
  const GenerationResult turn1 = generate_or_fail(*g.generator, greedy_request(first, 10));
  // The next prompt: the first, its reply, and more.
  std::vector<int32_t> second = first;
  second.insert(second.end(), turn1.tokens.begin(), turn1.tokens.end());
  const std::vector<int32_t> more = loaded_.tokenizer->encode(" Then they", false, false);
  second.insert(second.end(), more.begin(), more.end());
  const GenerationResult turn2 = generate_or_fail(*g.generator, greedy_request(second, 10));
  // All but the last reply token were fed back, so they are cached.
  EXPECT_EQ(turn2.timings.n_reused_tokens,
            static_cast<int32_t>(first.size() + turn1.tokens.size() - 1));
  EXPECT_EQ(turn2.timings.n_prompt_tokens, static_cast<int32_t>(1 + more.size()));

  testing::GeneratorWithCache fresh = make_generator(loaded_, 256);
  const GenerationResult expected = generate_or_fail(*fresh.generator, greedy_request(second, 10));
  EXPECT_EQ(turn2.tokens, expected.tokens);

  // The same prompt again: everything but its last token is reused.
  const GenerationResult again = generate_or_fail(*g.generator, greedy_request(second, 10));
  EXPECT_EQ(again.timings.n_reused_tokens, static_cast<int32_t>(second.size() - 1));
  EXPECT_EQ(again.tokens, expected.tokens);
}

TEST_F(StoriesGenerator, AStopStringEndsTheTextRightBeforeIt) {
  testing::GeneratorWithCache g = make_generator(loaded_, 256);
  const std::vector<int32_t> prompt = encode("Once upon a time");
  const GenerationResult full = generate_or_fail(*g.generator, greedy_request(prompt, 40));
  const size_t at = full.text.find("Lily");
  ASSERT_NE(at, std::string::npos) << full.text;
  GenerationRequest request = greedy_request(prompt, 40);
  request.stop.stop_strings = {"Lily"};
  std::string streamed;
  const GenerationResult stopped =
      generate_or_fail(*g.generator, request, [&](std::string_view delta) { streamed += delta; });
  EXPECT_EQ(stopped.text, full.text.substr(0, at));
  EXPECT_EQ(streamed, stopped.text);
  EXPECT_EQ(stopped.finish, FinishReason::kStop);
  EXPECT_LT(stopped.tokens.size(), full.tokens.size());
}

TEST_F(StoriesGenerator, AFullContextEndsWithLength) {
  testing::GeneratorWithCache g = make_generator(loaded_, 32);  // two blocks of 16
  ASSERT_EQ(g.generator->context_size(), 32);
  const std::vector<int32_t> prompt = encode("Once upon a time");
  const GenerationResult result = generate_or_fail(*g.generator, greedy_request(prompt, 1000));
  EXPECT_EQ(result.finish, FinishReason::kLength);
  // Every slot holds a token, and the last token sampled needs none.
  EXPECT_EQ(result.tokens.size(), 32 - prompt.size() + 1);
  EXPECT_EQ(g.generator->cached_tokens().size(), 32u);
}

TEST_F(StoriesGenerator, SeededSamplingIsReproducible) {
  testing::GeneratorWithCache g = make_generator(loaded_, 256);
  const std::vector<int32_t> prompt = encode("Once upon a time");
  auto sample = [&](uint64_t seed) {
    GenerationRequest request;
    request.prompt = prompt;
    request.sampling.temperature = 1.0f;
    request.sampling.seed = seed;
    request.stop.max_tokens = 40;
    return generate_or_fail(*g.generator, request).tokens;
  };
  EXPECT_EQ(sample(5), sample(5));
  EXPECT_NE(sample(5), sample(6));
}

TEST_F(StoriesGenerator, RejectsPromptsThatCannotRun) {
  testing::GeneratorWithCache g = make_generator(loaded_, 16);
  EXPECT_FALSE(g.generator->generate(greedy_request({}, 4), nullptr).ok());
  const std::vector<int32_t> long_prompt(17, 300);
  const Expected<GenerationResult> too_long =
      g.generator->generate(greedy_request(long_prompt, 4), nullptr);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().message(), "the prompt has 17 tokens, more than the context of 16");
  const std::vector<int32_t> bos = {1};
  GenerationRequest bad = greedy_request(bos, 4);
  bad.sampling.top_p = 2.0f;
  EXPECT_FALSE(g.generator->generate(bad, nullptr).ok());
  const std::vector<int32_t> bad_token = {1, 512};  // outside the vocabulary of 512
  EXPECT_FALSE(g.generator->generate(greedy_request(bad_token, 4), nullptr).ok());
}

}  // namespace
}  // namespace pagoda::engine
