// Backend::sample_rows on the CPU: each row's token is sample_row's (sampling/
// row_sampling.h, with no limit on a list's length) over that row with its own
// adjustments, whatever the row's place in the list of adjustments and the view's stride:
// greedy rows, plain draws, rows with bias and penalties, truncated rows (top-k past the
// GPU's capacity included), rows refused (-1) and rows left to the host (a NaN), with the
// log-probabilities sample_row reports where a row asks. The rows and adjustments it
// cannot take are errors, and the logits are left as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "sampling/row_sampling.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

TEST(SampleRows, CpuGivesEachRowSampleRowsToken) {
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t n : {int64_t{1}, int64_t{33}, int64_t{49152}}) {
    const int64_t rows = 12;
    Matrix logits(rows, n, 3, static_cast<uint32_t>(n));  // padded rows: a strided view
    logits.at(1, 0) = nan;                                 // a NaN in a truncated row: the host's
    for (int64_t c = 0; c < n; ++c) logits.at(2, c) = -inf;  // nothing above -inf
    std::vector<RowSampling> samplings(static_cast<size_t>(rows));
    std::vector<LogitAdjustment> adjustments;
    for (int64_t r = 0; r < rows; ++r) {
      RowSampling& s = samplings[static_cast<size_t>(r)];
      s.temperature = r % 3 == 0 ? 0.0f : 0.3f * static_cast<float>(r);
      s.uniform = 0.07 * static_cast<double>(r);
      if (r % 4 == 1) s.top_k = 3;
      if (r % 5 == 2) s.top_p = 0.7f;
      if (r == 7) s.log_min_p = std::log(0.1f);
      if (r >= 5) {  // rows 5.. adjust tokens 0 and n - 1 (once where they are one)
        s.first_adjustment = static_cast<int32_t>(adjustments.size());
        adjustments.push_back(LogitAdjustment{0, kAddBias | kRepeated, 10.0f, 0.0f});
        if (n > 1) adjustments.push_back(LogitAdjustment{static_cast<int32_t>(n - 1), kSubtract, 0.0f, 1.5f});
        s.n_adjustments = static_cast<int32_t>(adjustments.size()) - s.first_adjustment;
        s.repetition_penalty = 1.25f;
      }
    }
    if (n > 2) samplings[11].top_k = kRowSamplingCapacity + 1;  // past the capacity where n allows
    for (const int64_t r : {3, 4, 10}) {  // log-probabilities: the greedy, a draw, an adjusted draw
      samplings[static_cast<size_t>(r)].logprobs = true;
      samplings[static_cast<size_t>(r)].top_logprobs = static_cast<int32_t>(std::min<int64_t>(n, r));
    }
    const std::vector<float> before = logits.data;
    std::vector<int32_t> ids(static_cast<size_t>(rows), -7);
    std::vector<RowLogprobs> reports(static_cast<size_t>(rows));
    cpu->sample_rows(logits.view(), samplings, adjustments, make_view(ids.data(), DType::I32, rows),
                     make_view(reports.data(), DType::I32, kRowLogprobsWords, rows));
    ASSERT_TRUE(cpu->take_error().ok());
    EXPECT_EQ(std::memcmp(logits.data.data(), before.data(), before.size() * sizeof(float)), 0)
        << "the logits are left as they were";
    std::vector<Candidate> candidates(static_cast<size_t>(n));
    std::vector<float> weights(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const RowSampling& s = samplings[static_cast<size_t>(r)];
      const std::span<const float> row(&logits.at(r, 0), static_cast<size_t>(n));
      RowLogprobs report;
      const int32_t want =
          sample_row(row, s, std::span<const LogitAdjustment>(adjustments).subspan(s.first_adjustment, s.n_adjustments),
                     candidates, weights, INT64_MAX, &report);
      EXPECT_EQ(ids[static_cast<size_t>(r)], want) << "row " << r << ", n " << n;
      if (!s.logprobs) continue;
      const RowLogprobs& got = reports[static_cast<size_t>(r)];
      EXPECT_EQ(got.chosen, report.chosen) << "row " << r;
      ASSERT_EQ(got.n_top, s.top_logprobs) << "row " << r;
      for (int32_t j = 0; j < got.n_top; ++j) {
        EXPECT_EQ(got.top[j].token, report.top[j].token) << "row " << r << ", top " << j;
        EXPECT_EQ(got.top[j].logprob, report.top[j].logprob) << "row " << r << ", top " << j;
      }
      if (n > 1) EXPECT_LT(got.chosen, 0.0f) << "row " << r;
      if (got.n_top > 0) EXPECT_GE(got.top[0].logprob, got.chosen) << "the best is at least as likely";
    }
    EXPECT_EQ(ids[1], n > 3 ? kLeftToHost : -1) << "truncated where top-k 3 is below n, else plain";
    EXPECT_EQ(ids[2], -1);
    EXPECT_NE(ids[11], kLeftToHost) << "no list is too long on the host";
    if (n > 1) EXPECT_EQ(ids[6], 0) << "greedy, and the bias lifts token 0 above the rest";
  }
}

TEST(SampleRows, CpuRefusesViewsAndRowsItCannotTake) {
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  Matrix logits(4, 8, 0, 1);
  std::vector<int32_t> ids(4);
  std::vector<RowSampling> rows(4, RowSampling{.temperature = 1.0f, .uniform = 0.5});
  std::vector<LogitAdjustment> adjustments = {LogitAdjustment{2, kAddBias, 1.0f, 0.0f}};
  std::vector<RowLogprobs> reports(4);
  const auto refused = [&](std::span<const RowSampling> r, DType id_type) {
    cpu->sample_rows(logits.view(), r, adjustments, make_view(ids.data(), id_type, 4),
                     make_view(reports.data(), DType::I32, kRowLogprobsWords, 4));
    return !cpu->take_error().ok();
  };
  EXPECT_FALSE(refused(rows, DType::I32));
  EXPECT_TRUE(refused(std::span<const RowSampling>(rows).first(3), DType::I32)) << "one row short";
  EXPECT_TRUE(refused(rows, DType::F32)) << "ids not I32";
  const auto with = [&](auto change) {
    std::vector<RowSampling> changed = rows;
    change(changed[2]);
    return refused(changed, DType::I32);
  };
  EXPECT_TRUE(with([](RowSampling& r) { r.uniform = 1.0; })) << "a uniform of 1";
  EXPECT_TRUE(with([](RowSampling& r) { r.temperature = -1.0f; })) << "a negative temperature";
  EXPECT_TRUE(with([](RowSampling& r) { r.top_p = 1.5f; })) << "top-p above 1";
  EXPECT_TRUE(with([](RowSampling& r) { r.log_min_p = 0.5f; })) << "min-p above 1";
  EXPECT_TRUE(with([](RowSampling& r) { r.repetition_penalty = 0.0f; })) << "a repetition penalty of 0";
  EXPECT_TRUE(with([](RowSampling& r) { r.first_adjustment = 1, r.n_adjustments = 1; })) << "past the list";
  EXPECT_FALSE(with([](RowSampling& r) { r.n_adjustments = 1; }));
  EXPECT_TRUE(with([](RowSampling& r) { r.logprobs = true, r.top_logprobs = kMaxDeviceTopLogprobs + 1; }))
      << "more top log-probabilities than a row reports";
  EXPECT_FALSE(with([](RowSampling& r) { r.logprobs = true, r.top_logprobs = 8; }));
  std::vector<RowSampling> asking = rows;
  asking[1].logprobs = true;
  cpu->sample_rows(logits.view(), asking, adjustments, make_view(ids.data(), DType::I32, 4), TensorView{});
  EXPECT_FALSE(cpu->take_error().ok()) << "log-probabilities asked with nowhere to write them";
  adjustments[0].token = 8;
  EXPECT_TRUE(refused(rows, DType::I32)) << "an adjustment past the vocabulary";
  adjustments[0] = LogitAdjustment{2, kAddBias, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  EXPECT_TRUE(refused(rows, DType::I32)) << "a NaN bias";
}

}  // namespace
}  // namespace pagoda::backend
