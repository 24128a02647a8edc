#pragma once
// What the GPU model and engine tests share: the skip when there is no CUDA device, and
// a CUDA backend made through the registry as `pagoda --device cuda` makes it.

#include <gtest/gtest.h>

#include <memory>

#include "backend/cuda/cuda_backend.h"
#include "backend/registry/registry.h"

namespace pagoda::gpu_testing {

#define PAGODA_SKIP_WITHOUT_GPU()                                                   \
  do {                                                                              \
    if (::pagoda::backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

// The CUDA backend; batch_invariant: every matmul through the few-token kernel.
inline std::unique_ptr<backend::Backend> make_cuda(bool batch_invariant = false) {
  backend::BackendOptions options;
  options.device.kind = backend::DeviceKind::kCuda;
  options.cuda.batch_invariant = batch_invariant;
  options.cuda.memory_utilization = 0.5;
  Expected<std::unique_ptr<backend::Backend>> backend = backend::create(options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

}  // namespace pagoda::gpu_testing
