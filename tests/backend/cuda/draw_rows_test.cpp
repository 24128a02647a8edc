// Backend::draw_rows on the GPU against the CPU backend's (core/draw.h): the same token
// for every row, bit for bit as the host draws it: greedy rows, draws at temperatures
// from 0.1 to 2.5 over vocabularies of 1 to 128256, refused rows (-1), rows with a NaN
// after the first logit or a +inf (sums that are not finite), and rows whose uniform puts
// the target on one of the host's running sums or a hair either side of it, where the
// kernel's own sums cannot decide and it must repeat the host's walk.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/test_util.h"
#include "core/argmax.h"
#include "core/exp_sum.h"
#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

TEST(CudaDrawRows, MatchesTheCpuOnEveryRow) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = cuda_testing::make_backend();
  ASSERT_NE(gpu, nullptr);
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t n : {int64_t{1}, int64_t{33}, int64_t{1024}, int64_t{128256}}) {
    const int64_t rows = 64;
    std::vector<float> host = testing::random_values(static_cast<size_t>(rows * n), static_cast<uint32_t>(n));
    for (float& x : host) x *= 8.0f;
    const auto at = [&](int64_t r, int64_t c) -> float& { return host[static_cast<size_t>(r * n + c)]; };
    std::vector<RowDraw> draws(static_cast<size_t>(rows));
    const float temperatures[] = {0.0f, 0.1f, 0.8f, 1.0f, 2.5f};
    for (int64_t r = 0; r < rows; ++r) {
      draws[static_cast<size_t>(r)] = RowDraw{temperatures[r % 5], static_cast<double>((r * 7919) % 1000) / 1000.0};
    }
    at(1, 0) = nan;
    for (int64_t c = 0; c < n; ++c) at(2, c) = -inf;
    // Rows 3..11: the target on the host's k-th running sum (k a quarter, half, three
    // quarters of the way), or one double either side of it.
    for (int64_t r = 3; r < 12; ++r) {
      const std::span<const float> row(&at(r, 0), static_cast<size_t>(n));
      const float max = row[argmax_logit(row)];
      std::vector<float> weights(static_cast<size_t>(n));
      const double total = exp_sum(row.data(), n, max, 1.0f / 0.8f, weights.data());
      const int64_t k = n * (1 + (r - 3) / 3) / 4;
      double cumulative = 0.0;
      for (int64_t i = 0; i < k; ++i) cumulative += static_cast<double>(weights[static_cast<size_t>(i)]);
      double uniform = cumulative / total;
      if ((r - 3) % 3 == 1) uniform = std::nextafter(uniform, 0.0);
      if ((r - 3) % 3 == 2) uniform = std::nextafter(uniform, 1.0);
      draws[static_cast<size_t>(r)] = RowDraw{0.8f, uniform < 1.0 ? uniform : 0.5};
    }
    if (n > 20) {
      at(12, 17) = nan;  // a NaN after the first logit: a sum that is not finite
      at(13, 9) = inf;
      draws[12] = draws[13] = RowDraw{1.0f, 0.3};
    }
    for (int64_t c = 0; c < n; c += 5) at(14, c) = -inf;  // -inf entries among finite ones
    cuda_testing::DeviceTensor logits = cuda_testing::allocate(*gpu, n, rows);
    ASSERT_NE(logits.buffer, nullptr);
    gpu->copy_from_host(host.data(), logits.whole());
    const std::vector<int32_t> got =
        cuda_testing::ids_from(*gpu, rows, [&](const TensorView& ids) { gpu->draw_rows(logits.view, draws, ids); });
    ASSERT_EQ(got.size(), static_cast<size_t>(rows));
    std::vector<int32_t> expected(static_cast<size_t>(rows), -9);
    cpu->draw_rows(make_view(host.data(), DType::F32, n, rows), draws, make_view(expected.data(), DType::I32, rows));
    ASSERT_TRUE(cpu->take_error().ok());
    EXPECT_EQ(got, expected) << "n " << n;
    EXPECT_EQ(got[1], -1);
    EXPECT_EQ(got[2], -1);
  }
}

}  // namespace
}  // namespace pagoda::backend
