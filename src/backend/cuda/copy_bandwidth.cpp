#include "backend/cuda/copy_bandwidth.h"

#include "backend/cuda/device_memory.h"

namespace pagoda::backend::cuda {

std::optional<double> measure_copy_bandwidth(cudaStream_t stream) {
  constexpr size_t kBytes = size_t{1} << 30;
  constexpr int kCopies = 10;
  Expected<DeviceMemory> from = DeviceMemory::allocate(kBytes, MemoryKind::kDevice, "a copy test");
  Expected<DeviceMemory> to = DeviceMemory::allocate(kBytes, MemoryKind::kDevice, "a copy test");
  if (!from.ok() || !to.ok()) return std::nullopt;
  cudaEvent_t start = nullptr, stop = nullptr;
  float ms = 0.0f;
  // Random-looking bytes are not needed: a copy's speed does not depend on the values.
  bool ok = cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess &&
            cudaMemsetAsync(from->data(), 1, kBytes, stream) == cudaSuccess &&
            cudaMemcpyAsync(to->data(), from->data(), kBytes, cudaMemcpyDeviceToDevice, stream) == cudaSuccess &&
            cudaEventRecord(start, stream) == cudaSuccess;
  for (int i = 0; ok && i < kCopies; ++i) {
    ok = cudaMemcpyAsync(to->data(), from->data(), kBytes, cudaMemcpyDeviceToDevice, stream) == cudaSuccess;
  }
  ok = ok && cudaEventRecord(stop, stream) == cudaSuccess && cudaEventSynchronize(stop) == cudaSuccess &&
       cudaEventElapsedTime(&ms, start, stop) == cudaSuccess && ms > 0.0f;
  if (start != nullptr) cudaEventDestroy(start);
  if (stop != nullptr) cudaEventDestroy(stop);
  cudaGetLastError();
  if (!ok) return std::nullopt;
  return 2.0 * static_cast<double>(kBytes) * kCopies / (static_cast<double>(ms) * 1e-3);
}

}  // namespace pagoda::backend::cuda
