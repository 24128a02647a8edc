// Backend::draw_rows on the CPU: a row with temperature 0 takes its greedy token
// (core/argmax.h), a row with a temperature its draw (core/draw.h), the refused rows
// (-1) included; and the views or draws it cannot take are errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/argmax.h"
#include "core/draw.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

TEST(DrawRows, CpuGivesEachRowsGreedyTokenOrDraw) {
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t n : {int64_t{1}, int64_t{33}, int64_t{49152}}) {
    const int64_t rows = 12;
    Matrix logits(rows, n, 3, static_cast<uint32_t>(n));  // padded rows: a strided view
    logits.at(1, 0) = nan;                                 // a NaN first: no token either way
    for (int64_t c = 0; c < n; ++c) logits.at(2, c) = -inf;  // nothing above -inf
    std::vector<RowDraw> draws(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      draws[static_cast<size_t>(r)] = RowDraw{r % 3 == 0 ? 0.0f : 0.3f * static_cast<float>(r), 0.07 * static_cast<double>(r)};
    }
    std::vector<int32_t> ids(static_cast<size_t>(rows), -7);
    cpu->draw_rows(logits.view(), draws, make_view(ids.data(), DType::I32, rows));
    ASSERT_TRUE(cpu->take_error().ok());
    std::vector<float> scratch(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const std::span<const float> row(&logits.at(r, 0), static_cast<size_t>(n));
      const RowDraw& d = draws[static_cast<size_t>(r)];
      const int32_t want = d.temperature == 0.0f ? greedy_token(row) : draw_token(row, d.temperature, d.uniform, scratch);
      EXPECT_EQ(ids[static_cast<size_t>(r)], want) << "row " << r << ", n " << n;
    }
    EXPECT_EQ(ids[1], -1);
    EXPECT_EQ(ids[2], -1);
  }
}

TEST(DrawRows, CpuRefusesViewsAndDrawsItCannotTake) {
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  Matrix logits(4, 8, 0, 1);
  std::vector<int32_t> ids(4);
  std::vector<RowDraw> draws(4, RowDraw{1.0f, 0.5});
  cpu->draw_rows(logits.view(), std::span<const RowDraw>(draws).first(3), make_view(ids.data(), DType::I32, 4));
  EXPECT_FALSE(cpu->take_error().ok()) << "one draw short";
  cpu->draw_rows(logits.view(), draws, make_view(ids.data(), DType::F32, 4));
  EXPECT_FALSE(cpu->take_error().ok()) << "ids not I32";
  draws[2].uniform = 1.0;
  cpu->draw_rows(logits.view(), draws, make_view(ids.data(), DType::I32, 4));
  EXPECT_FALSE(cpu->take_error().ok()) << "a uniform of 1";
  draws[2] = RowDraw{-1.0f, 0.5};
  cpu->draw_rows(logits.view(), draws, make_view(ids.data(), DType::I32, 4));
  EXPECT_FALSE(cpu->take_error().ok()) << "a negative temperature";
}

}  // namespace
}  // namespace pagoda::backend
