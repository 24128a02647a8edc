#include "backend/registry/registry.h"

#include <gtest/gtest.h>

#include <string>

namespace pagoda::backend {
namespace {

TEST(DeviceSpec, ParsesEveryForm) {
  EXPECT_EQ(parse_device("auto")->kind, DeviceKind::kAuto);
  EXPECT_EQ(parse_device("CPU")->kind, DeviceKind::kCpu);
  const Expected<DeviceSpec> cuda = parse_device("cuda");
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ(cuda->kind, DeviceKind::kCuda);
  EXPECT_EQ(cuda->index, 0);
  EXPECT_EQ(parse_device("cuda:3")->index, 3);
  EXPECT_EQ(parse_device("cuda:3")->to_string(), "cuda:3");
  EXPECT_EQ(parse_device("cpu")->to_string(), "cpu");
  for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:1x", "cuda1", "cpu:0", "cuda: 1"}) {
    const Expected<DeviceSpec> spec = parse_device(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().message(),
              "'" + std::string(bad) + "' is not a device: use auto, cpu, cuda or cuda:N");
  }
}

TEST(DeviceSpec, ParsesNumericsAndMemoryShares) {
  EXPECT_EQ(*parse_cpu_numerics("Reference"), CpuNumerics::kReference);
  EXPECT_EQ(*parse_cpu_numerics("fast"), CpuNumerics::kFast);
  EXPECT_FALSE(parse_cpu_numerics("exact").ok());
  EXPECT_TRUE(check_memory_utilization(1.0).ok());
  EXPECT_TRUE(check_memory_utilization(0.05).ok());
  EXPECT_FALSE(check_memory_utilization(0.0).ok());
  EXPECT_FALSE(check_memory_utilization(1.01).ok());
}

TEST(Registry, CpuIsAlwaysThere) {
  BackendOptions options;
  options.device.kind = DeviceKind::kCpu;
  options.cpu.n_threads = 1;
  const Expected<std::unique_ptr<Backend>> backend = create(options);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ((*backend)->name().rfind("cpu (", 0), 0u) << (*backend)->name();
}

// Asking for a GPU this build or machine does not have is one line saying which.
TEST(Registry, CudaWithoutItSaysWhy) {
  BackendOptions options;
  options.device = *parse_device("cuda:0");
  const Expected<std::unique_ptr<Backend>> backend = create(options);
  if (backend.ok()) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(backend.status().code(), ErrorCode::kUnsupported);
  const std::string& message = backend.status().message();
  EXPECT_EQ(message.find('\n'), std::string::npos);
  if (cuda_built()) {
    EXPECT_EQ(message, "device cuda:0: no CUDA device found");
  } else {
    EXPECT_EQ(message.rfind("device cuda:0: this build of pagoda has no CUDA backend", 0), 0u) << message;
  }
}

TEST(Registry, AutoFallsBackToTheCpu) {
  const DeviceSpec resolved = resolve_device(DeviceSpec{});
  if (resolved.kind == DeviceKind::kCuda) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_EQ(resolved.kind, DeviceKind::kCpu);
  BackendOptions options;
  options.cpu.n_threads = 1;
  const Expected<std::unique_ptr<Backend>> backend = create(options);
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  EXPECT_EQ((*backend)->name().rfind("cpu (", 0), 0u);
}

}  // namespace
}  // namespace pagoda::backend
