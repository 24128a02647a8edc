// Backend::argmax_rows on the CPU: each row's greedy token as the sampler takes it
// (core/argmax.h), including the rows it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/argmax.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Rows of `m` set to the cases the rule is about; the others stay random.
void set_special_rows(Matrix& m) {
  const int64_t n = m.cols;
  m.at(0, n - 1) = 50.0f;                    // the largest at the end
  m.at(1, 3) = 40.0f, m.at(1, 9) = 40.0f;    // a tie: the lower index
  m.at(2, 0) = kNaN;                         // a NaN first: no token
  for (int64_t c = 0; c < n; ++c) m.at(3, c) = -kInf;  // nothing above -inf: no token
  m.at(4, 5) = kNaN, m.at(4, 6) = 30.0f;     // a NaN later never wins
  m.at(5, 2) = kInf, m.at(5, 7) = kInf;      // +inf: the first of them
  for (int64_t c = 0; c < n; ++c) m.at(6, c) = -kInf;
  m.at(6, n - 2) = -1e30f;                   // one finite value among -inf
}

TEST(ArgmaxRows, CpuGivesTheGreedyTokenOfEveryRow) {
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  for (const int64_t n : {int64_t{17}, int64_t{4099}, int64_t{49152}}) {
    Matrix logits(9, n, 3, static_cast<uint32_t>(n));  // padded rows: a strided view
    set_special_rows(logits);
    std::vector<int32_t> ids(9, -7);
    cpu->argmax_rows(logits.view(), make_view(ids.data(), DType::I32, 9));
    ASSERT_TRUE(cpu->take_error().ok());
    const std::vector<int32_t> special = {static_cast<int32_t>(n - 1), 3, -1, -1, 6, 2, static_cast<int32_t>(n - 2)};
    for (size_t r = 0; r < special.size(); ++r) EXPECT_EQ(ids[r], special[r]) << "row " << r << ", n " << n;
    for (int64_t r = 0; r < 9; ++r) {
      const std::span<const float> row(&logits.at(r, 0), static_cast<size_t>(n));
      EXPECT_EQ(ids[static_cast<size_t>(r)], greedy_token(row)) << "row " << r << ", n " << n;
    }
  }
}

TEST(ArgmaxRows, CpuRefusesViewsItCannotRead) {
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  Matrix logits(4, 8, 0, 1);
  std::vector<int32_t> ids(4);
  cpu->argmax_rows(logits.view(), make_view(ids.data(), DType::I32, 3));  // one id short
  EXPECT_FALSE(cpu->take_error().ok());
  cpu->argmax_rows(logits.view(), make_view(ids.data(), DType::F32, 4));  // not I32
  EXPECT_FALSE(cpu->take_error().ok());
}

}  // namespace
}  // namespace pagoda::backend
