// Speculative decoding with a draft model changes nothing a request gets: the outputs of
// greedy and seeded sampled requests, batched and preempted, are those of decoding
// without speculation, whether the draft agrees with the model most of the time (a
// Q4_0 copy of it) or rarely (random weights); the draft's KV blocks come and go with
// the model's, and all are free at the end.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/draft_proposer.h"
#include "engine_test_util.h"
#include "speculative_test_util.h"
#include "tokenizer/vocabulary_match.h"
#include "tools/random_model.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;
using testing::DraftModel;
using testing::expect_same;
using testing::make_engine;
using testing::Received;
using testing::run_all;
using testing::story_requests;

class SpeculativeDraft : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = testing::load_batched_model("stories260K.gguf", config(SpeculativeMethod::kDraft, 1).load_options());
    ASSERT_TRUE(m_.model && m_.tokenizer);
    const model::LoadOptions draft_options = config(SpeculativeMethod::kDraft, 1).draft_load_options();
    quantized_ = testing::load_draft_model(testing::model_path("stories260K-Q4_0.gguf"), *m_.backend, draft_options);
    ASSERT_TRUE(tools::write_random_model(testing::tiny_random_model(256), m_.file.get(), random_file_.path()).ok());
    random_ = testing::load_draft_model(random_file_.path(), *m_.backend, draft_options);
    ASSERT_TRUE(quantized_.model && random_.model);
  }

  // n_blocks blocks of the model's KV and, with a draft, the draft's.
  EngineConfig config(SpeculativeMethod method, int32_t n_blocks, const model::Model* draft = nullptr) const {
    EngineConfig config = testing::config_with_blocks(
        m_.model ? m_.model->config() : model::ModelConfig{}, n_blocks, method);
    if (draft != nullptr) {
      config.kv_memory.bytes = *config.kv_memory.bytes +
                               DraftProposer::block_bytes(*draft, config) * static_cast<uint64_t>(n_blocks);
    }
    return config;
  }

  std::vector<Received> run(const EngineConfig& config, model::Model* draft,
                            const std::vector<EngineRequest>& requests, EngineStats* stats = nullptr) {
    spdlog::set_level(spdlog::level::warn);
    Expected<std::unique_ptr<Engine>> engine =
        Engine::create(*m_.model, *m_.backend, *m_.tokenizer, config, draft);
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    if (!engine.ok()) return {};
    std::vector<Received> received = run_all(**engine, requests);
    const EngineStats final_stats = (*engine)->stats();
    EXPECT_EQ(final_stats.n_free_kv_blocks, final_stats.n_kv_blocks);
    if (stats != nullptr) *stats = final_stats;
    return received;
  }

  BatchedModel m_;
  testing::TempFile random_file_{"random_draft.gguf"};
  DraftModel quantized_, random_;
};

// Greedy requests get exactly the tokens of decoding without a draft; seeded sampled
// ones the same tokens every time they run (their distribution is the statistical
// test's business).
TEST_F(SpeculativeDraft, GreedyOutputsAreThoseWithoutADraftAndSeedsReproduce) {
  const std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  for (const int32_t n_blocks : {256, 24}) {  // 24: requests are preempted and recomputed
    const std::vector<Received> plain = run(config(SpeculativeMethod::kNone, n_blocks), nullptr, requests);
    for (DraftModel* draft : {&quantized_, &random_}) {
      const bool good_draft = draft == &quantized_;
      SCOPED_TRACE(std::string(good_draft ? "Q4_0 draft, " : "random draft, ") + std::to_string(n_blocks) + " blocks");
      const EngineConfig with_draft = config(SpeculativeMethod::kDraft, n_blocks, draft->model.get());
      EngineStats stats;
      const std::vector<Received> speculated = run(with_draft, draft->model.get(), requests, &stats);
      ASSERT_EQ(speculated.size(), requests.size());
      int32_t n_sampled_differently = 0;
      for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i].sampling.greedy()) {
          expect_same({plain[i]}, {speculated[i]});
        } else {
          n_sampled_differently += plain[i].tokens != speculated[i].tokens;
        }
      }
      // Drawn proposals use the generator differently: sampled outputs differ from
      // those without a draft, yet are the same run after run.
      EXPECT_GT(n_sampled_differently, 0);
      if (n_blocks == 256) {
        expect_same(speculated, run(with_draft, draft->model.get(), requests));
        // With adaptive proposal counts, which follow measured timings, a seeded request
        // still gets the same tokens every run (it keeps to its own history).
        EngineConfig adaptive = with_draft;
        adaptive.speculative.adaptive = true;
        const std::vector<Received> first = run(adaptive, draft->model.get(), requests);
        expect_same(first, run(adaptive, draft->model.get(), requests));
        for (size_t i = 0; i < requests.size(); ++i) {
          if (requests[i].sampling.greedy()) expect_same({plain[i]}, {first[i]});
        }
      }
      EXPECT_EQ(stats.n_kv_blocks, n_blocks);  // the budget paid for both caches
      const double proposed = static_cast<double>(stats.scheduler.n_draft_tokens);
      const double accepted = static_cast<double>(stats.scheduler.n_accepted_draft_tokens);
      if (good_draft) {
        EXPECT_GT(proposed, 300);
        EXPECT_GT(accepted / proposed, 0.5);
      } else {
        // Rejected proposals make each request propose less (draft_length.h).
        EXPECT_GT(proposed, 20);
        EXPECT_LT(accepted / proposed, 0.5);
      }
      if (n_blocks == 24) {
        EXPECT_GT(stats.scheduler.n_preemptions, 0);
      }
    }
  }
}

// A prompt longer than the draft's pass holds: it catches up over a few steps, proposing
// nothing meanwhile, then proposes; requests that opt out cost the draft nothing.
TEST_F(SpeculativeDraft, TheDraftRunsOnlyForRequestsThatPropose) {
  std::vector<EngineRequest> requests(2);
  std::string text;
  while (text.size() < 450) text += "Lily and Tom played in the park. They liked to play. ";
  for (EngineRequest& r : requests) {
    r.prompt = m_.tokenizer->encode(text, true, false);
    r.sampling.temperature = 0.0f;
    r.stop.max_tokens = 40;
    r.stop.ignore_eog = true;
  }
  ASSERT_GT(requests[0].prompt.size(), 110u);  // more than the draft's 104 tokens a pass
  ASSERT_LT(requests[0].prompt.size(), 200u);
  const EngineConfig with_draft = config(SpeculativeMethod::kDraft, 256, quantized_.model.get());
  const std::vector<Received> plain = run(config(SpeculativeMethod::kNone, 256), nullptr, requests);
  EngineStats stats;
  expect_same(plain, run(with_draft, quantized_.model.get(), requests, &stats));
  EXPECT_GT(stats.scheduler.n_accepted_draft_tokens, 10);
  // The draft ran each prompt once, and a token or a few per proposal.
  EXPECT_GT(stats.n_draft_model_tokens, 2 * static_cast<int64_t>(requests[0].prompt.size()));

  for (EngineRequest& r : requests) r.speculative = false;
  EngineStats off;
  expect_same(plain, run(with_draft, quantized_.model.get(), requests, &off));
  EXPECT_EQ(off.scheduler.n_draft_tokens, 0);
  EXPECT_EQ(off.n_draft_model_tokens, 0);
}

// The draft stops a greedy request's run of proposals at the first token it is unsure of
// (SpeculativeConfig::draft_p_min): fewer proposals reach the model, of which a larger
// share is kept, the outputs are unchanged, and the blocks the declined proposals had are
// free again (run() checks every block is free at the end, also after preemptions).
TEST_F(SpeculativeDraft, TheDraftDeclinesTheTokensItIsUnsureOf) {
  std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  for (EngineRequest& r : requests) r.sampling.temperature = 0.0f;
  for (const int32_t n_blocks : {256, 24}) {
    SCOPED_TRACE(std::to_string(n_blocks) + " blocks");
    const std::vector<Received> plain = run(config(SpeculativeMethod::kNone, n_blocks), nullptr, requests);
    EngineConfig every = config(SpeculativeMethod::kDraft, n_blocks, quantized_.model.get());
    EngineConfig sure = every;
    sure.speculative.draft_p_min = 0.9f;
    EngineStats all_stats, sure_stats;
    expect_same(plain, run(every, quantized_.model.get(), requests, &all_stats));
    expect_same(plain, run(sure, quantized_.model.get(), requests, &sure_stats));
    const auto share = [](const EngineStats& s) {
      return static_cast<double>(s.scheduler.n_accepted_draft_tokens) / static_cast<double>(s.scheduler.n_draft_tokens);
    };
    EXPECT_GT(sure_stats.scheduler.n_draft_tokens, 0);
    EXPECT_LT(sure_stats.scheduler.n_draft_tokens, all_stats.scheduler.n_draft_tokens);
    EXPECT_GT(share(sure_stats), share(all_stats));
    // A draft that is never sure enough proposes nothing, and the outputs stay the same.
    EngineConfig never = every;
    never.speculative.draft_p_min = 1.0f;
    EngineStats never_stats;
    expect_same(plain, run(never, quantized_.model.get(), requests, &never_stats));
    EXPECT_LT(never_stats.scheduler.n_draft_tokens, sure_stats.scheduler.n_draft_tokens);
  }
}

TEST_F(SpeculativeDraft, AbortsLeaveEveryBlockFree) {
  Expected<std::unique_ptr<Engine>> engine =
      Engine::create(*m_.model, *m_.backend, *m_.tokenizer,
                     config(SpeculativeMethod::kDraft, 24, quantized_.model.get()), quantized_.model.get());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto sink = std::make_shared<testing::RecordingSink>();
  const std::vector<EngineRequest> requests = story_requests(*m_.tokenizer);
  std::vector<RequestId> ids;
  for (int round = 0; round < 3; ++round) {
    for (const EngineRequest& request : requests) {
      Expected<std::vector<RequestId>> added = (*engine)->add(request, sink);
      ASSERT_TRUE(added.ok()) << added.status().message();
      ids.push_back(added->front());
    }
    for (size_t i = 0; i < ids.size(); i += 3) (*engine)->abort(ids[i]);
  }
  ASSERT_TRUE(sink->wait_finished(ids));
  const EngineStats stats = (*engine)->stats();
  EXPECT_EQ(stats.n_running + stats.n_waiting, 0);
  EXPECT_EQ(stats.n_free_kv_blocks, stats.n_kv_blocks);
  EXPECT_GT(stats.scheduler.n_accepted_draft_tokens, 0);
}

TEST_F(SpeculativeDraft, TheEngineNeedsTheDraftItIsConfiguredFor) {
  const Expected<std::unique_ptr<Engine>> missing =
      Engine::create(*m_.model, *m_.backend, *m_.tokenizer, config(SpeculativeMethod::kDraft, 64), nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "engine: speculating with a draft model needs the draft model loaded");
}

// A draft must have the model's vocabulary, token for token: the error names the first
// difference.
TEST_F(SpeculativeDraft, AVocabularyMismatchNamesTheFirstDifference) {
  const auto tokenizer_of = [](const std::string& path) {
    Expected<gguf::Reader> file = gguf::Reader::open(path);
    EXPECT_TRUE(file.ok()) << file.status().message();
    Expected<tokenizer::Tokenizer> tokenizer = tokenizer::Tokenizer::from_gguf(*file);
    EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
    return std::move(tokenizer).value();
  };
  // The Q4_0 copy and the random model written with the model's tokenizer match it.
  EXPECT_TRUE(tokenizer::check_same_vocabulary(*m_.tokenizer, tokenizer_of(testing::model_path("stories260K-Q4_0.gguf"))).ok());
  EXPECT_TRUE(tokenizer::check_same_vocabulary(*m_.tokenizer, tokenizer_of(random_file_.path())).ok());

  // A made-up vocabulary of the same size: bytes first, like the model's, then words.
  tools::RandomModelSpec spec = testing::tiny_random_model(256);
  spec.n_vocab = m_.tokenizer->n_vocab();
  testing::TempFile other("other_vocab.gguf");
  ASSERT_TRUE(tools::write_random_model(spec, nullptr, other.path()).ok());
  const tokenizer::Tokenizer made_up = tokenizer_of(other.path());
  tokenizer::TokenId first = 0;
  while (first < made_up.n_vocab() && made_up.token_text(first) == m_.tokenizer->token_text(first)) ++first;
  ASSERT_LT(first, made_up.n_vocab());
  const Status status = tokenizer::check_same_vocabulary(*m_.tokenizer, made_up);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "the draft model's vocabulary differs from the model's at token " +
                                  std::to_string(first) + ": '" + std::string(made_up.token_text(first)) +
                                  "' in the draft, '" + std::string(m_.tokenizer->token_text(first)) +
                                  "' in the model");

  spec.n_vocab = 300;
  testing::TempFile smaller("smaller_vocab.gguf");
  ASSERT_TRUE(tools::write_random_model(spec, nullptr, smaller.path()).ok());
  EXPECT_EQ(tokenizer::check_same_vocabulary(*m_.tokenizer, tokenizer_of(smaller.path())).message(),
            "the draft model's vocabulary has 300 tokens, the model's 512");
}

}  // namespace
}  // namespace pagoda::engine
