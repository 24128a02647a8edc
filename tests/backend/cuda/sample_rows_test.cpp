// Backend::sample_rows on the GPU against sampling/row_sampling.h's sample_row with the
// GPU's capacity: the same token for every row, bit for bit, over vocabularies of 1 to
// 128256. Plain rows: greedy ones, draws at temperatures from 0.1 to 2.5, refused rows
// (-1), rows with a NaN after the first logit or a +inf, and rows whose uniform puts the
// target on one of the host's running sums or a hair either side of it, where the
// kernel's own sums cannot decide and it must repeat the host's walk. Rows with bias and
// penalties, and truncated ones: top-k, top-p and min-p alone and together, over peaked
// and flat logits, ties, -0 beside +0, a top-p target that lands exactly on a running sum
// (the exact sum's path), heads past the capacity, and NaN or +inf after the adjustments
// (left to the host by both). A third of the rows report log-probabilities: the same top
// tokens, values within a float's rounding of the host's.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend/test_util.h"
#include "core/argmax.h"
#include "core/exp_sum.h"
#include "cuda_test_util.h"
#include "sampling/row_sampling.h"

namespace pagoda::backend {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Rows {
  int64_t n = 0, rows = 0;
  std::vector<float> logits;  // [rows][n]
  std::vector<RowSampling> samplings;
  std::vector<LogitAdjustment> adjustments;
  float& at(int64_t r, int64_t c) { return logits[static_cast<size_t>(r * n + c)]; }
  void adjust(int64_t r, std::vector<LogitAdjustment> list, float repetition_penalty = 1.0f) {
    RowSampling& s = samplings[static_cast<size_t>(r)];
    s.first_adjustment = static_cast<int32_t>(adjustments.size());
    s.n_adjustments = static_cast<int32_t>(list.size());
    s.repetition_penalty = repetition_penalty;
    adjustments.insert(adjustments.end(), list.begin(), list.end());
  }
};

// Rows 3..11 of a plain-draw block: the target on the host's k-th running sum (k a
// quarter, half, three quarters of the way), or one double either side of it.
void put_targets_on_running_sums(Rows& t) {
  for (int64_t r = 3; r < 12; ++r) {
    const std::span<const float> row(&t.at(r, 0), static_cast<size_t>(t.n));
    const float max = row[argmax_logit(row)];
    std::vector<float> weights(static_cast<size_t>(t.n));
    const double total = exp_sum(row.data(), t.n, max, 1.0f / 0.8f, weights.data());
    const int64_t k = t.n * (1 + (r - 3) / 3) / 4;
    double cumulative = 0.0;
    for (int64_t i = 0; i < k; ++i) cumulative += static_cast<double>(weights[static_cast<size_t>(i)]);
    double uniform = cumulative / total;
    if ((r - 3) % 3 == 1) uniform = std::nextafter(uniform, 0.0);
    if ((r - 3) % 3 == 2) uniform = std::nextafter(uniform, 1.0);
    t.samplings[static_cast<size_t>(r)] = RowSampling{.temperature = 0.8f, .uniform = uniform < 1.0 ? uniform : 0.5};
  }
}

Rows make_rows(int64_t n) {
  Rows t;
  t.n = n;
  t.rows = 96;
  t.logits = testing::random_values(static_cast<size_t>(t.rows * n), static_cast<uint32_t>(n));
  for (float& x : t.logits) x *= 8.0f;
  t.samplings.resize(static_cast<size_t>(t.rows));
  const float temperatures[] = {0.0f, 0.1f, 0.8f, 1.0f, 2.5f};
  for (int64_t r = 0; r < t.rows; ++r) {
    RowSampling& s = t.samplings[static_cast<size_t>(r)];
    s.temperature = temperatures[r % 5];
    s.uniform = static_cast<double>((r * 7919) % 1000) / 1000.0;
  }
  // Rows 0..15: plain.
  t.at(1, 0) = std::numeric_limits<float>::quiet_NaN();
  for (int64_t c = 0; c < n; ++c) t.at(2, c) = -kInf;
  put_targets_on_running_sums(t);
  if (n > 20) {
    t.at(12, 17) = std::numeric_limits<float>::quiet_NaN();  // a sum that is not finite
    t.at(13, 9) = kInf;
    t.samplings[12] = t.samplings[13] = RowSampling{.temperature = 1.0f, .uniform = 0.3};
  }
  for (int64_t c = 0; c < n; c += 5) t.at(14, c) = -kInf;
  // Rows 16..95: adjusted or truncated, temperatures and uniforms as above.
  const auto token = [n](int64_t i) { return static_cast<int32_t>(i % n); };
  for (int64_t r = 16; r < t.rows; ++r) {
    RowSampling& s = t.samplings[static_cast<size_t>(r)];
    const int64_t kind = r % 16;
    if (kind == 0 || kind == 5) s.top_k = static_cast<int32_t>(1 + (r * 37) % 90);
    if (kind == 1 || kind == 5 || kind == 9) s.top_p = 0.3f + 0.1f * static_cast<float>(r % 7);
    if (kind == 2 || kind == 9) s.log_min_p = std::log(0.02f * static_cast<float>(1 + r % 5));
    if (kind == 3) s.top_k = kRowSamplingCapacity;
    if (kind == 4) s.top_k = kRowSamplingCapacity + 1;  // left to the host where n is larger
    if (kind == 6 || kind == 7) {  // flat logits: top-p or min-p heads of most of the row
      for (int64_t c = 0; c < n; ++c) t.at(r, c) *= 0.01f;
      (kind == 6 ? s.top_p : s.log_min_p) = kind == 6 ? 0.95f : std::log(0.5f);
    }
    if (kind == 8) {  // ties: logits on a grid of 0.5, and -0 beside +0
      for (int64_t c = 0; c < n; ++c) t.at(r, c) = std::round(t.at(r, c) * 0.25f) * 0.5f;
      t.at(r, 0) = -0.0f;
      s.top_k = 50, s.top_p = 0.8f;
    }
    if ((kind == 10 || kind == 11) && n >= 4) {  // a bias, penalties, and truncation after them
      t.adjust(r,
               {LogitAdjustment{token(r), kAddBias, 30.0f, 0.0f},
                LogitAdjustment{token(r + 1), kRepeated | kSubtract, 0.0f, 0.75f},
                LogitAdjustment{token(r + 2), kAddBias | kRepeated, -2.0f, 0.0f},
                LogitAdjustment{token(r + 3), kAddBias, -kInf, 0.0f}},
               1.3f);
      if (kind == 11) s.top_k = 20, s.log_min_p = std::log(0.001f);
    }
    if (kind == 12) {  // every logit banned but one
      std::vector<LogitAdjustment> bans;
      for (int64_t c = 0; c < n; ++c) bans.push_back(LogitAdjustment{token(c), kAddBias, c == n / 3 ? 0.0f : -kInf, 0.0f});
      t.adjust(r, bans);
      s.top_p = 0.9f;
    }
    if (kind == 13) t.adjust(r, {LogitAdjustment{token(r), kRepeated, 0.0f, 0.0f}}, 1e-38f);  // +inf if positive
    if (kind == 13) t.at(r, token(r)) = 8.0f;
    if (kind == 14) {  // four tokens tied on top, the rest -inf: p * sum lands on a running sum
      for (int64_t c = 0; c < n; ++c) t.at(r, c) = -kInf;
      for (int64_t c = 0; c < 4; ++c) t.at(r, (c * 7) % n) = 2.0f;
      s.top_p = 0.5f;
      s.temperature = 1.0f;
    }
    if (kind == 15) s.top_k = 3, s.top_p = 0.9f, s.log_min_p = std::log(0.3f);
    if (r % 3 == 0) {  // a third of the rows report log-probabilities
      s.logprobs = true;
      s.top_logprobs = static_cast<int32_t>(std::min<int64_t>(n, r % 21));
    }
  }
  return t;
}

TEST(CudaSampleRows, MatchesTheCpuOnEveryRow) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = cuda_testing::make_backend();
  ASSERT_NE(gpu, nullptr);
  for (const int64_t n : {int64_t{1}, int64_t{33}, int64_t{1024}, int64_t{49152}, int64_t{128256}}) {
    Rows t = make_rows(n);
    cuda_testing::DeviceTensor logits = cuda_testing::allocate(*gpu, n, t.rows);
    ASSERT_NE(logits.buffer, nullptr);
    gpu->copy_from_host(t.logits.data(), logits.whole());
    Expected<std::unique_ptr<Buffer>> report_memory = gpu->allocate(static_cast<size_t>(t.rows) * sizeof(RowLogprobs));
    ASSERT_TRUE(report_memory.ok());
    const TensorView reports_view = make_view((*report_memory)->data(), DType::I32, kRowLogprobsWords, t.rows);
    const auto run = [&](const TensorView& ids) {
      gpu->sample_rows(logits.view, t.samplings, t.adjustments, ids, reports_view);
    };
    const std::vector<int32_t> got = cuda_testing::ids_from(*gpu, t.rows, run);
    ASSERT_EQ(got.size(), static_cast<size_t>(t.rows));
    std::vector<RowLogprobs> reports(static_cast<size_t>(t.rows));
    gpu->copy_to_host(reports_view, reports.data());
    gpu->synchronize();
    ASSERT_TRUE(gpu->take_error().ok());
    std::vector<int32_t> expected;
    std::vector<RowLogprobs> expected_reports(static_cast<size_t>(t.rows));
    std::vector<Candidate> candidates(static_cast<size_t>(n));
    std::vector<float> weights(static_cast<size_t>(n));
    for (const RowSampling& s : t.samplings) {
      const std::span<const LogitAdjustment> own =
          std::span<const LogitAdjustment>(t.adjustments).subspan(s.first_adjustment, s.n_adjustments);
      const auto r = static_cast<int64_t>(expected.size());
      expected.push_back(sample_row(std::span<const float>(&t.at(r, 0), static_cast<size_t>(n)), s, own, candidates,
                                    weights, kRowSamplingCapacity, &expected_reports[static_cast<size_t>(r)]));
    }
    // The GPU may leave more rows to the host than sample_row does: a top log-probability
    // list that reaches into a row's -inf logits ends inside a tie of more tokens than
    // the list holds (the host reports the lowest ids among them). Only those here.
    for (int64_t r = 0; r < t.rows; ++r) {
      const RowSampling& s = t.samplings[static_cast<size_t>(r)];
      if (got[static_cast<size_t>(r)] != kLeftToHost || expected[static_cast<size_t>(r)] < 0) continue;
      const int64_t finite = std::count_if(&t.at(r, 0), &t.at(r, 0) + n, [](float x) { return x > -kInf; });
      EXPECT_TRUE(s.logprobs && finite < s.top_logprobs && finite + kRowSamplingCapacity < n)
          << "n " << n << ", row " << r << " left to the host";
      expected[static_cast<size_t>(r)] = kLeftToHost;
    }
    // Log-probabilities: the same tokens on top, and values within a float's rounding
    // of the host's (the normalizer's sum is taken in another order).
    for (int64_t r = 0; r < t.rows; ++r) {
      const RowSampling& s = t.samplings[static_cast<size_t>(r)];
      if (!s.logprobs || expected[static_cast<size_t>(r)] < 0) continue;
      const RowLogprobs& a = reports[static_cast<size_t>(r)], &b = expected_reports[static_cast<size_t>(r)];
      const auto near = [](float x, float y) { return x == y || std::fabs(x - y) <= 1e-6f + 1e-6f * std::fabs(y); };
      EXPECT_TRUE(near(a.chosen, b.chosen)) << "n " << n << ", row " << r << ": " << a.chosen << " vs " << b.chosen;
      ASSERT_EQ(a.n_top, b.n_top) << "n " << n << ", row " << r;
      for (int32_t j = 0; j < a.n_top; ++j) {
        EXPECT_EQ(a.top[j].token, b.top[j].token) << "n " << n << ", row " << r << ", top " << j;
        EXPECT_TRUE(near(a.top[j].logprob, b.top[j].logprob)) << "n " << n << ", row " << r << ", top " << j;
      }
    }
    for (int64_t r = 0; r < t.rows; ++r) {
      EXPECT_EQ(got[static_cast<size_t>(r)], expected[static_cast<size_t>(r)]) << "n " << n << ", row " << r;
    }
    EXPECT_EQ(got[1], -1);
    EXPECT_EQ(got[2], -1);
    // The logits are left as they were: the same ids again.
    const std::vector<int32_t> again = cuda_testing::ids_from(*gpu, t.rows, run);
    EXPECT_EQ(again, got) << "n " << n;
  }
}

TEST(CudaSampleRows, RefusesRowsItCannotTake) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = cuda_testing::make_backend();
  ASSERT_NE(gpu, nullptr);
  cuda_testing::DeviceTensor logits = cuda_testing::allocate(*gpu, 8, 2);
  ASSERT_NE(logits.buffer, nullptr);
  std::vector<RowSampling> rows(2, RowSampling{.temperature = 1.0f, .uniform = 0.5});
  rows[1].top_p = 2.0f;
  Expected<std::unique_ptr<Buffer>> ids = gpu->allocate(2 * sizeof(int32_t));
  ASSERT_TRUE(ids.ok());
  gpu->sample_rows(logits.view, rows, {}, make_view((*ids)->data(), DType::I32, 2), TensorView{});
  EXPECT_FALSE(gpu->take_error().ok()) << "top-p above 1";
  rows[1] = RowSampling{.temperature = 1.0f, .uniform = 0.5, .first_adjustment = 0, .n_adjustments = 1};
  gpu->sample_rows(logits.view, rows, {}, make_view((*ids)->data(), DType::I32, 2), TensorView{});
  EXPECT_FALSE(gpu->take_error().ok()) << "adjustments past the list";
  rows[1] = RowSampling{.temperature = 1.0f, .uniform = 0.5, .logprobs = true};
  gpu->sample_rows(logits.view, rows, {}, make_view((*ids)->data(), DType::I32, 2), TensorView{});
  EXPECT_FALSE(gpu->take_error().ok()) << "log-probabilities asked with nowhere to write them";
}

}  // namespace
}  // namespace pagoda::backend
