// Speculative decoding keeps the model's distribution. Many seeded draws of a prompt's
// next four tokens at temperature 1, without speculation and with a draft model whose
// proposals are drawn and then kept or replaced by the rejection rule (a draft that
// agrees with the model often: its Q4_0 copy; one that rarely does: random weights).
// For the second, third and fourth token (the ones verified), a chi-square test of
// homogeneity between the draws with and without the draft must not reject at the
// 0.001 level. The draws are seeded, so the test gives the same verdict every run.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/draft_proposer.h"
#include "engine_test_util.h"
#include "speculative_test_util.h"
#include "tools/random_model.h"

namespace pagoda::engine {
namespace {

using testing::BatchedModel;
using testing::Received;

constexpr int32_t kDraws = 3000;
constexpr int32_t kTokens = 4;

// Two samples of a categorical variable: the chi-square statistic of homogeneity, with
// categories seen fewer than 10 times in both together pooled into one.
struct ChiSquare {
  double statistic = 0.0;
  int degrees_of_freedom = 0;
};

ChiSquare chi_square(const std::map<int32_t, int>& a, const std::map<int32_t, int>& b) {
  std::map<int32_t, std::pair<double, double>> cells;
  std::pair<double, double> rare{0.0, 0.0};
  double n_a = 0.0, n_b = 0.0;
  std::map<int32_t, std::pair<double, double>> all;
  for (const auto& [key, count] : a) all[key].first += count;
  for (const auto& [key, count] : b) all[key].second += count;
  for (const auto& [key, counts] : all) {
    n_a += counts.first;
    n_b += counts.second;
    if (counts.first + counts.second < 10) {
      rare.first += counts.first;
      rare.second += counts.second;
    } else {
      cells[key] = counts;
    }
  }
  if (rare.first + rare.second > 0) cells[-1] = rare;
  ChiSquare result;
  for (const auto& [key, counts] : cells) {
    const double total = counts.first + counts.second;
    const double expected_a = total * n_a / (n_a + n_b), expected_b = total * n_b / (n_a + n_b);
    result.statistic += (counts.first - expected_a) * (counts.first - expected_a) / expected_a +
                        (counts.second - expected_b) * (counts.second - expected_b) / expected_b;
  }
  result.degrees_of_freedom = static_cast<int>(cells.size()) - 1;
  return result;
}

// The chi-square quantile at 1 - 0.001 (Wilson-Hilferty: within a few percent for df >= 3).
double critical_value(int df) {
  const double z = 3.0902;  // the standard normal's 0.999 quantile
  const double k = static_cast<double>(df);
  const double c = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * c * c * c;
}

class SpeculativeDistribution : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = testing::load_batched_model("stories260K.gguf", base_config().load_options());
    ASSERT_TRUE(m_.model && m_.tokenizer);
  }

  static EngineConfig base_config() {
    EngineConfig config;
    config.scheduler = {.max_batched_tokens = 256, .max_running = 4, .max_model_len = 64};
    config.kv_memory.bytes = 64u << 20;
    config.speculative.method = SpeculativeMethod::kDraft;
    config.speculative.num_speculative_tokens = 3;
    config.speculative.adaptive = false;  // every request verifies 3 when it can
    return config;
  }

  // counts[i][token]: how often token i of the output was `token`.
  std::vector<std::map<int32_t, int>> draw(model::Model* draft, EngineStats* stats) {
    EngineConfig config = base_config();
    if (draft == nullptr) config.speculative.method = SpeculativeMethod::kNone;
    spdlog::set_level(spdlog::level::warn);
    Expected<std::unique_ptr<Engine>> engine =
        Engine::create(*m_.model, *m_.backend, *m_.tokenizer, config, draft);
    EXPECT_TRUE(engine.ok()) << engine.status().message();
    std::vector<std::map<int32_t, int>> counts(kTokens);
    if (!engine.ok()) return counts;
    std::vector<EngineRequest> requests(kDraws);
    for (int32_t i = 0; i < kDraws; ++i) {
      EngineRequest& r = requests[static_cast<size_t>(i)];
      r.prompt = m_.tokenizer->encode("Once upon a time, there was a little", true, false);
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 1000 + static_cast<uint64_t>(i);
      r.stop.max_tokens = kTokens;
      r.stop.ignore_eog = true;
    }
    for (const Received& received : testing::run_all(**engine, requests)) {
      EXPECT_EQ(received.tokens.size(), static_cast<size_t>(kTokens)) << received.error;
      for (size_t t = 0; t < received.tokens.size() && t < counts.size(); ++t) ++counts[t][received.tokens[t]];
    }
    *stats = (*engine)->stats();
    return counts;
  }

  BatchedModel m_;
};

TEST_F(SpeculativeDistribution, DrawnProposalsKeepTheModelsDistribution) {
  EngineStats plain_stats;
  const std::vector<std::map<int32_t, int>> plain = draw(nullptr, &plain_stats);

  testing::TempFile random_path("distribution_random_draft.gguf");
  ASSERT_TRUE(tools::write_random_model(testing::tiny_random_model(64), m_.file.get(), random_path.path()).ok());
  const model::LoadOptions draft_options = base_config().draft_load_options();
  const testing::DraftModel quantized =
      testing::load_draft_model(testing::model_path("stories260K-Q4_0.gguf"), *m_.backend, draft_options);
  const testing::DraftModel random = testing::load_draft_model(random_path.path(), *m_.backend, draft_options);
  ASSERT_TRUE(quantized.model && random.model);

  for (model::Model* draft : {quantized.model.get(), random.model.get()}) {
    SCOPED_TRACE(draft == quantized.model.get() ? "Q4_0 draft" : "random draft");
    EngineStats stats;
    const std::vector<std::map<int32_t, int>> speculated = draw(draft, &stats);
    // The rule did run, and both ways: proposals kept and proposals replaced.
    EXPECT_GT(stats.scheduler.n_draft_tokens, kDraws / 2);
    EXPECT_GT(stats.scheduler.n_accepted_draft_tokens, 0);
    EXPECT_LT(stats.scheduler.n_accepted_draft_tokens, stats.scheduler.n_draft_tokens);
    // The first token is sampled before any proposal: the same draws exactly.
    EXPECT_EQ(plain[0], speculated[0]);
    for (int t = 1; t < kTokens; ++t) {
      const ChiSquare test = chi_square(plain[static_cast<size_t>(t)], speculated[static_cast<size_t>(t)]);
      ASSERT_GE(test.degrees_of_freedom, 3);
      EXPECT_LT(test.statistic, critical_value(test.degrees_of_freedom))
          << "token " << t << ": chi-square " << test.statistic << " with " << test.degrees_of_freedom
          << " degrees of freedom";
    }
  }
}

}  // namespace
}  // namespace pagoda::engine
