#pragma once
// 64-byte aligned memory for the CPU backend: cache-line aligned so that SIMD loads
// never straddle lines at row starts and threads never share a line at a buffer's edge.

#include <cstddef>
#include <memory>

#include "backend/backend.h"
#include "core/status.h"

namespace pagoda::backend::cpu {

inline constexpr size_t kAlignment = 64;

// Allocations of at least kHugePageMinBytes (the weights kept repacked, the KV cache, a
// long prompt's scratch) are aligned to 2 MiB and asked to be backed by transparent huge
// pages (madvise, which Debian's kernels honour by default): the kernels stream them, and
// the attention reads the KV blocks of every sequence scattered over the cache, through
// far fewer TLB entries. Their size is rounded up to 2 MiB.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kHugePageMinBytes = 2 * kHugePageBytes;

struct AlignedFree {
  void operator()(void* p) const noexcept;
};
using AlignedPtr = std::unique_ptr<std::byte, AlignedFree>;

// `bytes` rounded up to the alignment (2 MiB from kHugePageMinBytes on); nullptr when the
// allocation fails.
AlignedPtr allocate_aligned(size_t bytes);

// A Buffer the backend hands out from allocate().
class CpuBuffer final : public Buffer {
 public:
  static Expected<std::unique_ptr<Buffer>> create(size_t bytes);
  void* data() override { return data_.get(); }
  size_t size() const override { return size_; }

 private:
  CpuBuffer(AlignedPtr data, size_t size) : data_(std::move(data)), size_(size) {}
  AlignedPtr data_;
  size_t size_;
};

// Per-op scratch that grows to the largest size asked for and is then reused: the
// per-token path allocates only when a batch is bigger than any before it.
class Scratch {
 public:
  // At least `bytes` of aligned memory (contents unspecified), or nullptr if out of memory.
  std::byte* reserve(size_t bytes);

 private:
  AlignedPtr data_;
  size_t capacity_ = 0;
};

}  // namespace pagoda::backend::cpu
