// A kernel fault on the GPU (here: an op given a view of memory that is not the
// device's) is a sticky CUDA error: the context is unusable for the rest of the process.
// The backend turns it into errors, never a crash or a hang: the step's take_error()
// says what happened, health() reports the fault from then on, and every later op is
// refused at once. It runs in a child process of its own (a death test re-executing the
// binary), since the fault would break the GPU for the tests after it.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

// In the child: fault, then check what the backend says. Exits 0 when all is as
// expected, else with the number of the first check that failed.
[[noreturn]] void fault_and_check() {
  Expected<std::unique_ptr<Backend>> made = make_cuda_backend();
  if (!made.ok()) std::exit(10);
  Backend& gpu = **made;
  if (!gpu.health().ok()) std::exit(11);
  // 1 MiB of floats at an address no allocation has: reading it faults.
  TensorView bogus = make_view(reinterpret_cast<void*>(uintptr_t{0x7f0000000000}), DType::F32, 1024, 256);
  gpu.add(bogus, bogus, bogus);
  gpu.synchronize();
  const Status step = gpu.take_error();
  if (step.ok()) std::exit(12);
  if (gpu.health().ok()) std::exit(13);
  // Later work is refused with the fault's story, without touching the device.
  Expected<std::unique_ptr<Buffer>> buffer = gpu.allocate(1024);
  if (buffer.ok()) std::exit(14);
  if (buffer.status().message().find("must be restarted") == std::string::npos) std::exit(15);
  gpu.synchronize();
  std::exit(0);
}

TEST(CudaBackendFaultDeathTest, AKernelFaultIsAnErrorAndTheBackendStaysDown) {
  PAGODA_SKIP_WITHOUT_CUDA();
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no inherited CUDA state
  EXPECT_EXIT(fault_and_check(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace pagoda::backend
