#pragma once
// The backend the model and engine tests run on: the CPU by default, the GPU when
// PAGODA_TEST_DEVICE says so (scripts/gpu_check.sh runs the engine tests again with
// PAGODA_TEST_DEVICE=cuda). On the GPU the matmuls run batch-invariant, as the CPU's
// fast numerics do, so that the tests that compare a request alone with the same
// request batched can ask for bit-for-bit equality on either.

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "backend/registry/registry.h"

namespace pagoda::testing {

inline std::string test_device() {
  const char* device = std::getenv("PAGODA_TEST_DEVICE");
  return device != nullptr && *device != '\0' ? device : "cpu";
}

inline bool testing_on_gpu() { return test_device().rfind("cuda", 0) == 0; }

// One CPU thread (the test machine is shared: a spinning pool would wait on descheduled
// threads), or the GPU PAGODA_TEST_DEVICE names; fails the test when it cannot be made.
inline std::unique_ptr<backend::Backend> make_test_backend(
    backend::CpuNumerics numerics = backend::CpuNumerics::kFast) {
  backend::BackendOptions options;
  const Expected<backend::DeviceSpec> device = backend::parse_device(test_device());
  EXPECT_TRUE(device.ok()) << "PAGODA_TEST_DEVICE: " << device.status().message();
  if (device.ok()) options.device = *device;
  options.cpu.n_threads = 1;
  options.cpu.numerics = numerics;
  options.cuda.batch_invariant = true;
  options.cuda.memory_utilization = 0.5;  // several engines may be alive at once
  Expected<std::unique_ptr<backend::Backend>> backend = backend::create(options);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

}  // namespace pagoda::testing
