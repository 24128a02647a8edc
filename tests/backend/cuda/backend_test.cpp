// The CUDA backend's own duties, through the Backend interface: opening a device, device
// memory and its count, copies (strided views too), weights, out of memory as an error
// that leaves the backend working, and the cache budget. (The KV cache and the staging
// of host inputs: backend_kv_staging_test.cpp.)

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

using cuda_testing::random_bytes;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct DeviceMatrix {
  std::unique_ptr<Buffer> buffer;
  TensorView view;
};

DeviceMatrix device_matrix(Backend& backend, int64_t cols, int64_t rows) {
  DeviceMatrix m;
  Expected<std::unique_ptr<Buffer>> buffer = backend.allocate(static_cast<size_t>(cols * rows) * sizeof(float));
  EXPECT_TRUE(buffer.ok()) << buffer.status().message();
  if (!buffer.ok()) return m;
  m.buffer = std::move(buffer).value();
  m.view = make_view(m.buffer->data(), DType::F32, cols, rows);
  return m;
}

TEST(CudaBackend, NamesTheDeviceAndRefusesOneThatDoesNotExist) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name().rfind("cuda:0 (", 0), 0u) << backend->name();
  EXPECT_FALSE(backend->host_addressable());
  CudaBackendOptions options;
  options.device = cuda_device_count();
  Expected<std::unique_ptr<Backend>> missing = make_cuda_backend(options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sees"), std::string::npos) << missing.status().message();
}

TEST(CudaBackend, CopiesRoundTripContiguousAndStridedViews) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  const int64_t cols = 37, rows = 11;
  DeviceMatrix m = device_matrix(*backend, cols, rows);
  ASSERT_NE(m.buffer, nullptr);
  const std::vector<float> values = random_floats(static_cast<size_t>(cols * rows), 1);
  backend->copy_from_host(values.data(), m.view);
  std::vector<float> back(values.size(), std::numeric_limits<float>::quiet_NaN());
  backend->copy_to_host(m.view, back.data());
  backend->synchronize();
  ASSERT_TRUE(backend->take_error().ok());
  EXPECT_EQ(std::memcmp(back.data(), values.data(), values.size() * sizeof(float)), 0);

  // Columns [5, 5 + 9) of every row: a strided view, copied out packed and back in.
  const TensorView slice = column_slice(m.view, 5, 9);
  std::vector<float> packed(static_cast<size_t>(9 * rows), std::numeric_limits<float>::quiet_NaN());
  backend->copy_to_host(slice, packed.data());
  backend->synchronize();
  ASSERT_TRUE(backend->take_error().ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < 9; ++c) EXPECT_EQ(packed[r * 9 + c], values[r * cols + 5 + c]) << r << "," << c;
  }
  for (float& x : packed) x = -x;
  backend->copy_from_host(packed.data(), slice);
  backend->copy_to_host(m.view, back.data());
  backend->synchronize();
  ASSERT_TRUE(backend->take_error().ok());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const bool in_slice = c >= 5 && c < 14;
      EXPECT_EQ(back[r * cols + c], in_slice ? -values[r * cols + c] : values[r * cols + c]) << r << "," << c;
    }
  }
}

TEST(CudaBackend, UploadsWeightsAndCountsAllocations) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  // A Q8_0 tensor [3][64]: 2 blocks of 34 bytes per row.
  const std::vector<uint8_t> host = random_bytes(3 * 2 * 34, 2);
  const TensorView host_view = make_view(const_cast<uint8_t*>(host.data()), DType::Q8_0, 64, 3);
  const int64_t before = cuda_allocation_count();
  Expected<TensorView> device = backend->upload_weight(host_view);
  ASSERT_TRUE(device.ok()) << device.status().message();
  EXPECT_EQ(cuda_allocation_count(), before + 1);
  EXPECT_NE(device->data, host_view.data);
  EXPECT_EQ(device->type, DType::Q8_0);
  std::vector<uint8_t> back(host.size(), 0xAB);
  backend->copy_to_host(*device, back.data());
  backend->synchronize();
  ASSERT_TRUE(backend->take_error().ok());
  EXPECT_EQ(back, host);
  // Copies and synchronisation allocate nothing.
  const int64_t loaded = cuda_allocation_count();
  for (int i = 0; i < 3; ++i) {
    backend->copy_to_host(*device, back.data());
    backend->synchronize();
  }
  EXPECT_EQ(cuda_allocation_count(), loaded);
}

TEST(CudaBackend, OutOfMemoryIsAnErrorThatLeavesTheBackendWorking) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  Expected<std::unique_ptr<Buffer>> huge = backend->allocate(size_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("free"), std::string::npos) << huge.status().message();
  // The failed cudaMalloc must not surface as a later op's error.
  DeviceMatrix m = device_matrix(*backend, 8, 2);
  ASSERT_NE(m.buffer, nullptr);
  const std::vector<float> values = random_floats(16, 3);
  std::vector<float> back(16, std::numeric_limits<float>::quiet_NaN());
  backend->copy_from_host(values.data(), m.view);
  backend->copy_to_host(m.view, back.data());
  backend->synchronize();
  EXPECT_TRUE(backend->take_error().ok());
  EXPECT_EQ(back, values);
}

TEST(CudaBackend, CacheMemoryIsWhatTheUtilizationBoundLeaves) {
  PAGODA_SKIP_WITHOUT_CUDA();
  CudaBackendOptions options;
  options.memory_utilization = 0.5;
  std::unique_ptr<Backend> backend = cuda_testing::make_backend(options);
  ASSERT_NE(backend, nullptr);
  std::optional<Backend::CacheMemory> cache = backend->cache_memory();
  ASSERT_TRUE(cache.has_value());
  EXPECT_NE(cache->description.find("50%"), std::string::npos) << cache->description;
  // Our fixed buffers (workspace, staging, cuBLAS's workspace) are in use already.
  Expected<std::unique_ptr<Buffer>> taken = backend->allocate(size_t{64} << 20);
  ASSERT_TRUE(taken.ok());
  std::optional<Backend::CacheMemory> after = backend->cache_memory();
  ASSERT_TRUE(after.has_value());
  if (cache->bytes >= (size_t{64} << 20)) {
    EXPECT_LE(after->bytes, cache->bytes - (size_t{64} << 20));
  }
  EXPECT_FALSE(make_cuda_backend({.memory_utilization = 1.5}).ok());
}

}  // namespace
}  // namespace pagoda::backend

namespace pagoda::backend {
namespace {

// The two ceilings benchmarks compare with, measured on the device: a copy's bandwidth
// and the BF16 GEMMs of a 1B layer's shapes at 512 tokens, each within what any CUDA GPU
// of the last decade gives (and far from what a mistake in the counting would: a factor
// of two or more).
TEST(CudaBackend, MeasuresItsBandwidthAndGemmRate) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  ASSERT_NE(backend, nullptr);
  const std::optional<Backend::MemoryBandwidth> bandwidth = backend->measure_memory_bandwidth();
  ASSERT_TRUE(bandwidth.has_value());
  EXPECT_GT(bandwidth->bytes_per_second, 100e9);
  EXPECT_LT(bandwidth->bytes_per_second, 20e12);
  const Backend::GemmShape shapes[] = {{2048, 2048, 2}, {512, 2048, 2}, {8192, 2048, 3}};
  const std::optional<double> seconds = backend->measure_gemm_seconds(shapes, 512);
  ASSERT_TRUE(seconds.has_value());
  const double flops = 2.0 * 512 * (2.0 * 2048 * 2048 + 2.0 * 512 * 2048 + 3.0 * 8192 * 2048);
  EXPECT_GT(flops / *seconds, 10e12) << *seconds << " s";
  EXPECT_LT(flops / *seconds, 3000e12) << *seconds << " s";
  EXPECT_TRUE(backend->take_error().ok());
}

}  // namespace
}  // namespace pagoda::backend
