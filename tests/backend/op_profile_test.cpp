// The CPU backend's profile of its ops (Backend::op_times, for `pagoda bench --profile`)
// and its memory bandwidth probe (Backend::measure_memory_bandwidth, the roofline).
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/memory_probe.h"
#include "backend/op_times.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

TEST(OpTimes, SumsByNameMostTimeFirst) {
  OpTimes times;
  times.add("rms_norm", 1.0);
  times.add("matmul f32 4x2", 2.0, 32);
  times.add("rms_norm", 0.5);
  times.add("matmul f32 4x2", 2.0, 32);
  const std::vector<OpTime> rows = times.sorted();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "matmul f32 4x2");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_DOUBLE_EQ(rows[0].seconds, 4.0);
  EXPECT_EQ(rows[0].weight_bytes, 64u);
  EXPECT_EQ(rows[1].name, "rms_norm");
  EXPECT_EQ(rows[1].calls, 2);
  EXPECT_DOUBLE_EQ(rows[1].seconds, 1.5);
  EXPECT_EQ(rows[1].weight_bytes, 0u);
  times.clear();
  EXPECT_TRUE(times.sorted().empty());
}

// Two matmuls (one alone, one of a pair sharing x) and a norm, on a backend that
// profiles: each is named with its weight, counted, and charged its weight bytes.
std::vector<OpTime> run_ops(Backend& backend) {
  Matrix w(8, 16, 0, 1), w2(4, 16, 0, 2), x(3, 16, 0, 3), y(3, 8), y2(3, 4), norm(1, 16, 0, 4), xn(3, 16);
  backend.matmul(w.view(), x.view(), y.view());
  backend.matmul(w.view(), x.view(), y.view());
  const MatmulTarget pair[] = {{w.view(), y.view()}, {w2.view(), y2.view()}};
  backend.matmuls(x.view(), pair);
  backend.rms_norm(x.view(), norm.view(), 1e-5f, xn.view());
  backend.synchronize();
  EXPECT_TRUE(backend.take_error().ok());
  return backend.op_times();
}

TEST(CpuOpProfile, NamesCountsAndWeightBytes) {
  CpuBackendOptions options;
  options.n_threads = 2;
  options.profile_ops = true;
  const std::unique_ptr<Backend> backend = make_cpu_backend(options);
  const std::vector<OpTime> rows = run_ops(*backend);
  ASSERT_EQ(rows.size(), 3u);
  for (const OpTime& row : rows) {
    EXPECT_GE(row.seconds, 0.0) << row.name;
    if (row.name == "matmul f32 16x8") {
      EXPECT_EQ(row.calls, 2);
      EXPECT_EQ(row.weight_bytes, 2u * 8 * 16 * sizeof(float));
    } else if (row.name == "matmul f32 16x[8,4]") {
      EXPECT_EQ(row.calls, 1);
      EXPECT_EQ(row.weight_bytes, (8u + 4u) * 16 * sizeof(float));
    } else {
      EXPECT_EQ(row.name, "rms_norm");
      EXPECT_EQ(row.calls, 1);
      EXPECT_EQ(row.weight_bytes, 0u);
    }
  }
  backend->reset_op_times();
  EXPECT_TRUE(backend->op_times().empty());
}

TEST(CpuOpProfile, OffUnlessAsked) {
  const std::unique_ptr<Backend> backend = make_cpu_backend({.n_threads = 1});
  EXPECT_TRUE(run_ops(*backend).empty());
}

TEST(MemoryProbe, MeasuresAFiniteReadRate) {
  ThreadPool pool(2);
  const std::optional<double> rate = cpu::measure_read_bandwidth(pool, size_t{64} << 20);
  ASSERT_TRUE(rate.has_value());
  EXPECT_TRUE(std::isfinite(*rate));
  // Any machine that runs these tests reads faster than 100 MB/s and slower than 100 TB/s.
  EXPECT_GT(*rate, 1e8);
  EXPECT_LT(*rate, 1e14);
  EXPECT_FALSE(cpu::measure_read_bandwidth(pool, 0).has_value());
}

TEST(MemoryProbe, TheCpuBackendSaysHowItMeasured) {
  const std::unique_ptr<Backend> backend = make_cpu_backend({.n_threads = 1});
  const std::optional<Backend::MemoryBandwidth> bandwidth = backend->measure_memory_bandwidth();
  ASSERT_TRUE(bandwidth.has_value());
  EXPECT_GT(bandwidth->bytes_per_second, 1e8);
  EXPECT_EQ(bandwidth->method, "streaming read of 1 GiB, 1 thread");
}

}  // namespace
}  // namespace pagoda::backend
