#pragma once
// Owners of CUDA memory. Every device (cudaMalloc) and pinned host (cudaMallocHost)
// allocation of the CUDA backend goes through DeviceMemory::allocate, which counts them
// (cuda_allocation_count: a serving run must add none after load) and turns a failure
// into a resource_exhausted Status naming the bytes asked and the device's free/total.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

enum class MemoryKind {
  kDevice,      // cudaMalloc: global memory of the current device
  kPinnedHost,  // cudaMallocHost: page-locked host memory the GPU copies from by DMA
};

// One allocation, freed when the owner goes away (errors while freeing are ignored: the
// process may be tearing the CUDA runtime down). Move-only.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  // `bytes` of memory of `kind` on the current device; `what` names it in the error.
  // Zero bytes: an empty owner, no allocation.
  static Expected<DeviceMemory> allocate(size_t bytes, MemoryKind kind, const std::string& what);

  DeviceMemory(DeviceMemory&& other) noexcept { swap(other); }
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    DeviceMemory old(std::move(*this));
    swap(other);
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { release(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  DeviceMemory(void* data, size_t size, MemoryKind kind) : data_(data), size_(size), kind_(kind) {}
  void swap(DeviceMemory& other) noexcept;
  void release() noexcept;

  void* data_ = nullptr;
  size_t size_ = 0;
  MemoryKind kind_ = MemoryKind::kDevice;
};

// Device bytes held by live DeviceMemory owners of this process (pinned host excluded).
uint64_t live_device_bytes();

// A Buffer of Backend::allocate: device memory, so data() is a device pointer.
class CudaBuffer final : public Buffer {
 public:
  explicit CudaBuffer(DeviceMemory memory) : memory_(std::move(memory)) {}
  void* data() override { return memory_.data(); }
  size_t size() const override { return memory_.size(); }

 private:
  DeviceMemory memory_;
};

// "139.8 GiB", "512.0 MiB", "64.0 KiB", "100 bytes".
std::string format_bytes(uint64_t bytes);

}  // namespace pagoda::backend::cuda
