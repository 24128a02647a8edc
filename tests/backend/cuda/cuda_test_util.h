#pragma once
// Shared helpers of the CUDA backend tests: skipping where there is no device, and f32
// matrices moved between host vectors and device views through the Backend interface
// (the tests talk to the GPU only through it).

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/tensor.h"

// First statement of every GPU test: skips it where the process sees no CUDA device.
#define PAGODA_SKIP_WITHOUT_CUDA()                                                             \
  do {                                                                                         \
    if (::pagoda::backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";        \
  } while (0)

namespace pagoda::backend::cuda_testing {

inline constexpr float kPoison = std::numeric_limits<float>::quiet_NaN();

// n bytes of a seeded generator.
inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// The CUDA backend, or null after a failed expectation naming why.
inline std::unique_ptr<Backend> make_backend(const CudaBackendOptions& options = {}) {
  Expected<std::unique_ptr<Backend>> backend = make_cuda_backend(options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

// Device memory and an f32 matrix view [rows][cols] of it whose rows lie `stride` floats
// apart (stride >= cols: the columns past cols are padding).
struct DeviceTensor {
  std::unique_ptr<Buffer> buffer;
  TensorView view;
  int64_t stride = 0;

  // The whole buffer as a contiguous [rows][stride] view, padding included.
  TensorView whole() const { return make_view(view.data, DType::F32, stride, view.ne[1]); }
};

// An f32 [rows][cols] matrix (rows cols + pad floats apart) with every float, padding
// included, set to `fill`: NaN by default, so that outputs an op leaves unwritten show.
inline DeviceTensor allocate(Backend& backend, int64_t cols, int64_t rows, int64_t pad = 0, float fill = kPoison) {
  DeviceTensor t;
  t.stride = cols + pad;
  const size_t n = static_cast<size_t>(t.stride * rows);
  Expected<std::unique_ptr<Buffer>> buffer = backend.allocate(n * sizeof(float));
  EXPECT_TRUE(buffer.ok()) << buffer.status().message();
  if (!buffer.ok()) return t;
  t.buffer = std::move(buffer).value();
  t.view = make_view(t.buffer->data(), DType::F32, cols, rows);
  t.view.nb[1] = static_cast<size_t>(t.stride) * sizeof(float);
  t.view.nb[2] = t.view.nb[3] = t.view.nb[1] * static_cast<size_t>(rows);
  const std::vector<float> filled(n, fill);
  backend.copy_from_host(filled.data(), t.whole());
  backend.synchronize();
  return t;
}

// values: [rows][cols] row-major; the padding (if any) holds NaN.
inline DeviceTensor upload(Backend& backend, const std::vector<float>& values, int64_t cols, int64_t rows,
                           int64_t pad = 0) {
  DeviceTensor t = allocate(backend, cols, rows, pad);
  if (t.buffer == nullptr) return t;
  EXPECT_EQ(values.size(), static_cast<size_t>(cols * rows));
  std::vector<float> padded(static_cast<size_t>(t.stride * rows), kPoison);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) padded[static_cast<size_t>(r * t.stride + c)] = values[static_cast<size_t>(r * cols + c)];
  }
  backend.copy_from_host(padded.data(), t.whole());
  backend.synchronize();
  return t;
}

// Sets every float of the buffer, padding included, to `value` (poisons an output again).
inline void fill(Backend& backend, const DeviceTensor& t, float value = kPoison) {
  const std::vector<float> filled(static_cast<size_t>(t.stride * t.view.ne[1]), value);
  backend.copy_from_host(filled.data(), t.whole());
  backend.synchronize();
}

// The f32 values of a view whose rows are evenly strided (nb[1], a multiple of 4 bytes,
// at least a row), as [n_rows][ne[0]] row-major; copies the rows' whole span and drops the
// gaps, so it needs no strided copy.
inline std::vector<float> download(Backend& backend, const TensorView& view) {
  const int64_t cols = view.ne[0], rows = view.n_rows();
  const int64_t stride = rows > 1 ? static_cast<int64_t>(view.nb[1] / sizeof(float)) : cols;
  std::vector<float> span(static_cast<size_t>(rows > 0 ? (rows - 1) * stride + cols : 0));
  if (!span.empty()) {
    backend.copy_to_host(make_view(view.data, DType::F32, static_cast<int64_t>(span.size())), span.data());
    backend.synchronize();
  }
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(r * cols + c)] = span[static_cast<size_t>(r * stride + c)];
  }
  return out;
}

// Every float of the buffer, padding included: [rows][stride].
inline std::vector<float> download_whole(Backend& backend, const DeviceTensor& t) {
  return download(backend, t.whole());
}

// The I32 ids an op writes on the GPU, one per row: `op` is called with an [rows] I32
// view of device memory; the ids come back once the device has run it without error
// (an empty vector after a failed expectation otherwise).
inline std::vector<int32_t> ids_from(Backend& gpu, int64_t rows, const std::function<void(const TensorView&)>& op) {
  Expected<std::unique_ptr<Buffer>> ids = gpu.allocate(static_cast<size_t>(rows) * sizeof(int32_t));
  EXPECT_TRUE(ids.ok()) << ids.status().message();
  if (!ids.ok()) return {};
  const TensorView view = make_view((*ids)->data(), DType::I32, rows);
  op(view);
  std::vector<int32_t> got(static_cast<size_t>(rows), -7);
  gpu.copy_to_host(view, got.data());
  gpu.synchronize();
  const Status status = gpu.take_error();
  EXPECT_TRUE(status.ok()) << status.message();
  return status.ok() ? got : std::vector<int32_t>{};
}

}  // namespace pagoda::backend::cuda_testing
