#include "backend/cuda/device_memory.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <utility>

#include "backend/cuda/cuda_backend.h"

namespace pagoda::backend {
namespace {

std::atomic<int64_t> g_allocations{0};        // cudaMalloc + cudaMallocHost calls that succeeded
std::atomic<uint64_t> g_live_device_bytes{0};  // held by live DeviceMemory owners

}  // namespace

int64_t cuda_allocation_count() { return g_allocations.load(std::memory_order_relaxed); }

namespace cuda {

std::string format_bytes(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024;
  char text[64];
  if (bytes >= kKiB * kKiB * kKiB) {
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / static_cast<double>(kKiB * kKiB * kKiB));
  } else if (bytes >= kKiB * kKiB) {
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / static_cast<double>(kKiB * kKiB));
  } else if (bytes >= kKiB) {
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / static_cast<double>(kKiB));
  } else {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  }
  return text;
}

uint64_t live_device_bytes() { return g_live_device_bytes.load(std::memory_order_relaxed); }

namespace {

// Why an allocation failed, with what the device had left at that moment.
Status allocation_failure(cudaError_t error, size_t bytes, MemoryKind kind, const std::string& what) {
  std::string message = "cuda: cannot allocate " + std::to_string(bytes) + " bytes (" + format_bytes(bytes) +
                        ") of " + (kind == MemoryKind::kDevice ? "device" : "pinned host") + " memory for " +
                        what + ": " + cudaGetErrorString(error) + " (" + cudaGetErrorName(error) + ")";
  if (kind == MemoryKind::kDevice) {
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      message += "; the device has " + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes);
    }
    cudaGetLastError();  // a failed cudaMemGetInfo must not show up as a later op's error
  }
  if (error == cudaErrorMemoryAllocation) return resource_exhausted(std::move(message));
  return internal_error(std::move(message));
}

}  // namespace

Expected<DeviceMemory> DeviceMemory::allocate(size_t bytes, MemoryKind kind, const std::string& what) {
  if (bytes == 0) return DeviceMemory();
  void* data = nullptr;
  const cudaError_t error = kind == MemoryKind::kDevice ? cudaMalloc(&data, bytes) : cudaMallocHost(&data, bytes);
  if (error != cudaSuccess) {
    // An out-of-memory error is also left as the thread's "last error": clear it, or
    // the next kernel launch's check would report it as its own.
    cudaGetLastError();
    return allocation_failure(error, bytes, kind, what);
  }
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (kind == MemoryKind::kDevice) g_live_device_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return DeviceMemory(data, bytes, kind);
}

void DeviceMemory::swap(DeviceMemory& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(kind_, other.kind_);
}

void DeviceMemory::release() noexcept {
  if (data_ == nullptr) return;
  if (kind_ == MemoryKind::kDevice) {
    cudaFree(data_);
    g_live_device_bytes.fetch_sub(size_, std::memory_order_relaxed);
  } else {
    cudaFreeHost(data_);
  }
  // A free that failed (a faulted context, or the runtime already unloaded at exit) is
  // not an error of whatever the thread launches next.
  cudaGetLastError();
  data_ = nullptr;
  size_ = 0;
}

}  // namespace cuda
}  // namespace pagoda::backend
