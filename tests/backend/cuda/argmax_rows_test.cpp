// Backend::argmax_rows on the GPU against the CPU backend's (core/argmax.h): the same
// token for every row, the refused rows (-1) included.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/test_util.h"
#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

TEST(CudaArgmaxRows, MatchesTheCpuOnEveryRow) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = cuda_testing::make_backend();
  ASSERT_NE(gpu, nullptr);
  std::unique_ptr<Backend> cpu = make_cpu_backend({.n_threads = 2});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t n : {int64_t{1}, int64_t{33}, int64_t{128256}}) {
    const int64_t rows = 70;
    std::vector<float> host = testing::random_values(static_cast<size_t>(rows * n), static_cast<uint32_t>(n));
    const auto at = [&](int64_t r, int64_t c) -> float& { return host[static_cast<size_t>(r * n + c)]; };
    at(0, n - 1) = 50.0f;
    at(1, 0) = nan;
    for (int64_t c = 0; c < n; ++c) at(2, c) = -inf;
    if (n > 10) {
      at(3, 3) = 40.0f, at(3, 9) = 40.0f;  // a tie
      at(4, 5) = nan, at(4, 6) = 30.0f;
      at(5, 2) = inf, at(5, 7) = inf;
      for (int64_t r = 6; r < rows; ++r) at(r, (r * 7919) % n) = 20.0f + static_cast<float>(r % 3);  // ties across threads
      at(6, n - 3) = 22.0f;
    }
    cuda_testing::DeviceTensor logits = cuda_testing::allocate(*gpu, n, rows);
    ASSERT_NE(logits.buffer, nullptr);
    gpu->copy_from_host(host.data(), logits.whole());
    const std::vector<int32_t> got =
        cuda_testing::ids_from(*gpu, rows, [&](const TensorView& ids) { gpu->argmax_rows(logits.view, ids); });
    ASSERT_EQ(got.size(), static_cast<size_t>(rows));
    std::vector<int32_t> expected(static_cast<size_t>(rows), -9);
    cpu->argmax_rows(make_view(host.data(), DType::F32, n, rows), make_view(expected.data(), DType::I32, rows));
    ASSERT_TRUE(cpu->take_error().ok());
    EXPECT_EQ(got, expected) << "n " << n;
    EXPECT_EQ(got[1], -1);
    EXPECT_EQ(got[2], -1);
  }
}

}  // namespace
}  // namespace pagoda::backend
