#include "backend/cpu/aligned_memory.h"

#include <sys/mman.h>

#include <cstdlib>
#include <string>

namespace pagoda::backend::cpu {

void AlignedFree::operator()(void* p) const noexcept { std::free(p); }

AlignedPtr allocate_aligned(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes >= kHugePageMinBytes && bytes <= SIZE_MAX - kHugePageBytes) {
    const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, rounded);
    // Advice only: where the kernel has no transparent huge pages (or keeps them off),
    // the memory is the same, in small pages.
    if (p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);
    return AlignedPtr(static_cast<std::byte*>(p));
  }
  if (bytes > SIZE_MAX - kAlignment) return nullptr;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return AlignedPtr(static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded)));
}

Expected<std::unique_ptr<Buffer>> CpuBuffer::create(size_t bytes) {
  AlignedPtr data = allocate_aligned(bytes);
  if (!data) return resource_exhausted("cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  return std::unique_ptr<Buffer>(new CpuBuffer(std::move(data), bytes));
}

std::byte* Scratch::reserve(size_t bytes) {
  if (bytes <= capacity_ && data_) return data_.get();
  // Grow by at least half again, so a slowly rising batch size reallocates rarely.
  const size_t grown = bytes > capacity_ + capacity_ / 2 ? bytes : capacity_ + capacity_ / 2;
  AlignedPtr fresh = allocate_aligned(grown);
  if (!fresh) return nullptr;
  data_ = std::move(fresh);
  capacity_ = grown;
  return data_.get();
}

}  // namespace pagoda::backend::cpu
