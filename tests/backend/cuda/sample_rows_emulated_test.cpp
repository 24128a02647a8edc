// The sample_rows kernel's own source (sample_rows_kernel.cuh) run on the host by the
// SIMT emulation (simt_emulation.h: 1024 fibers a block), against
// sampling/row_sampling.h's sample_row with the GPU's capacity: the same token for every
// row, and the same top tokens with log-probabilities within a float's rounding, over
// vocabularies of 7 to 49152 and every kind of row (plain greedy and draws, adjusted,
// top-k, top-p and min-p alone and together, flat and peaked logits, ties with -0 beside
// +0, a top-p target landing on a running sum, lists past the capacity, NaN and +inf
// after the adjustments), and plain draws whose target lies on one of the host's running
// sums (the kernel's exact walk). It checks the kernel's logic where CI has no GPU; where a GPU is,
// CudaSampleRows runs the kernel itself and this test skips.
#include "simt_emulation.h"  // first: it takes over the CUDA qualifiers

#include "backend/cuda/sample_rows_kernel.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "core/exp_sum.h"

namespace pagoda::backend::cuda {
namespace {

struct Row {
  std::vector<float> logits;
  RowSampling sampling;
  std::vector<LogitAdjustment> adjustments;
};

// Row `c` of a vocabulary of n: its kind is c % 17.
Row make_row(int n, int c, std::mt19937& rng) {
  Row row;
  const int kind = c % 17;
  std::normal_distribution<float> normal(0.0f, kind == 6 || kind == 7 ? 0.01f : 8.0f);
  row.logits.resize(static_cast<size_t>(n));
  for (float& x : row.logits) x = normal(rng);
  RowSampling& s = row.sampling;
  s.temperature = c % 5 == 0 ? 0.0f : 0.1f + 0.5f * static_cast<float>(c % 5);
  s.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  if (kind == 0 || kind == 5) s.top_k = 1 + (c * 37) % 90;
  if (kind == 1 || kind == 5 || kind == 9) s.top_p = 0.3f + 0.1f * static_cast<float>(c % 7);
  if (kind == 2 || kind == 9) s.log_min_p = std::log(0.02f * static_cast<float>(1 + c % 5));
  if (kind == 3) s.top_k = kRowSamplingCapacity;
  if (kind == 4) s.top_k = std::min(n - 1, 3000);
  if (kind == 6) s.top_p = 0.95f;                    // flat: a long head
  if (kind == 7) s.log_min_p = std::log(0.5f);       // flat: a long list
  if (kind == 8) {                                   // ties on a grid of 0.5, -0 beside +0
    for (float& x : row.logits) x = std::round(x * 0.25f) * 0.5f;
    row.logits[0] = -0.0f;
    s.top_k = 50, s.top_p = 0.8f;
  }
  if ((kind == 10 || kind == 12) && n >= 8) {
    row.adjustments = {LogitAdjustment{c % n, kAddBias, 30.0f, 0.0f},
                       LogitAdjustment{(c + 1) % n, kRepeated | kSubtract, 0.0f, 0.75f},
                       LogitAdjustment{(c + 2) % n, kAddBias | kRepeated, -2.0f, 0.0f},
                       LogitAdjustment{(c + 3) % n, kAddBias, -INFINITY, 0.0f}};
    s.repetition_penalty = 1.3f;
    if (kind == 10) s.top_k = 20, s.log_min_p = std::log(0.001f);  // kind 12: the whole row's draw
  }
  if (kind == 11) {  // four tokens tied on top, the rest -inf: p times the sum lands on a running sum
    for (float& x : row.logits) x = -INFINITY;
    for (int i = 0; i < 4; ++i) row.logits[static_cast<size_t>((i * 7) % n)] = 2.0f;
    s.top_p = 0.5f, s.temperature = 1.0f;
  }
  if (kind == 13 && n >= 8) {  // a repeated positive logit divided past the largest float
    row.logits[3] = 8.0f;
    row.adjustments = {LogitAdjustment{3, kRepeated, 0.0f, 0.0f}};
    s.repetition_penalty = 1e-38f, s.top_p = 0.9f;
  }
  if (kind == 14) s.top_p = 0.0f;
  if (kind == 15) s.top_p = 0.999f;
  if (kind == 16) s.top_k = 2, s.log_min_p = std::log(0.9f), s.top_p = 0.99f;
  if (c % 3 == 0) s.logprobs = true, s.top_logprobs = std::min(n, c % 21);
  s.n_adjustments = static_cast<int32_t>(row.adjustments.size());
  return row;
}

// A plain draw (nothing adjusted or truncated) whose uniform puts the target on the
// host's k-th running sum of the weights, or a double either side (`side` -1, 0, 1):
// where the kernel's parallel sums cannot decide and it repeats the host's walk.
Row plain_draw_on_a_running_sum(int n, int64_t k, int side, std::mt19937& rng) {
  Row row;
  std::normal_distribution<float> normal(0.0f, 8.0f);
  row.logits.resize(static_cast<size_t>(n));
  for (float& x : row.logits) x = normal(rng);
  const float max = *std::max_element(row.logits.begin(), row.logits.end());
  std::vector<float> weights(static_cast<size_t>(n));
  const double total = exp_sum(row.logits.data(), n, max, 1.0f / 0.8f, weights.data());
  double cumulative = 0.0;
  for (int64_t i = 0; i < k; ++i) cumulative += static_cast<double>(weights[static_cast<size_t>(i)]);
  double uniform = cumulative / total;
  if (side < 0) uniform = std::nextafter(uniform, 0.0);
  if (side > 0) uniform = std::nextafter(uniform, 1.0);
  row.sampling.temperature = 0.8f;
  row.sampling.uniform = uniform < 1.0 ? uniform : 0.5;
  return row;
}

bool near(float x, float y) { return x == y || std::fabs(x - y) <= 1e-6f + 1e-6f * std::fabs(y); }

TEST(CudaSampleRowsEmulated, TheKernelsSourceGivesSampleRowsTokens) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is here: CudaSampleRows runs the kernel itself";
  int rows = 0, left_to_host = 0;
  for (const int n : {7, 300, 5000, 49152}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    for (int c = 0; c < 17; ++c) {
      Row row = make_row(n, c, rng);
      const std::string what = "n " + std::to_string(n) + ", row " + std::to_string(c);
      std::vector<Candidate> candidates(static_cast<size_t>(n));
      std::vector<float> weights(static_cast<size_t>(n));
      RowLogprobs want_report;
      const int32_t want = sample_row(row.logits, row.sampling, row.adjustments, candidates, weights,
                                      kRowSamplingCapacity, &want_report);

      std::vector<float> logits = row.logits, adjusted(static_cast<size_t>(n));
      int32_t got = -9;
      RowLogprobs report;
      const row_sampling_kernel::SampleRowsArgs args{
          F32Rows{reinterpret_cast<char*>(logits.data()), 1, 1, static_cast<int64_t>(n) * 4,
                  static_cast<int64_t>(n) * 4, static_cast<int64_t>(n) * 4},
          n, &row.sampling, row.adjustments.data(), adjusted.data(), 0, &got, &report};
      simt::run_block(row_sampling_kernel::kThreads, 0, [&] { row_sampling_kernel::sample_rows_kernel(args); });

      ++rows;
      if (want == kLeftToHost) ++left_to_host;
      ASSERT_EQ(got, want) << what;
      ASSERT_EQ(std::memcmp(logits.data(), row.logits.data(), logits.size() * sizeof(float)), 0)
          << what << ": the logits are left as they were";
      if (want < 0 || !row.sampling.logprobs) continue;
      EXPECT_TRUE(near(report.chosen, want_report.chosen)) << what;
      ASSERT_EQ(report.n_top, want_report.n_top) << what;
      for (int32_t j = 0; j < report.n_top; ++j) {
        EXPECT_EQ(report.top[j].token, want_report.top[j].token) << what << ", top " << j;
        EXPECT_TRUE(near(report.top[j].logprob, want_report.top[j].logprob)) << what << ", top " << j;
      }
    }
  }
  std::mt19937 rng(99);
  for (const int side : {-1, 0, 1}) {
    Row row = plain_draw_on_a_running_sum(5000, 2500, side, rng);
    std::vector<Candidate> candidates(5000);
    std::vector<float> weights(5000);
    const int32_t want = sample_row(row.logits, row.sampling, {}, candidates, weights);
    std::vector<float> adjusted(5000);
    int32_t got = -9;
    const row_sampling_kernel::SampleRowsArgs args{
        F32Rows{reinterpret_cast<char*>(row.logits.data()), 1, 1, 5000 * 4, 5000 * 4, 5000 * 4},
        5000, &row.sampling, nullptr, adjusted.data(), 0, &got, nullptr};
    simt::run_block(row_sampling_kernel::kThreads, 0, [&] { row_sampling_kernel::sample_rows_kernel(args); });
    EXPECT_EQ(got, want) << "a target on a running sum, side " << side;
    ++rows;
  }
  EXPECT_EQ(rows, 71);
  EXPECT_GT(left_to_host, 2) << "the capacity and +inf fallbacks were exercised";
}

}  // namespace
}  // namespace pagoda::backend::cuda
