#include "backend/cpu/weight_copies.h"

#include <cstring>

#include "core/memory_info.h"

namespace pagoda::backend::cpu {

const void* WeightCopies::copy(const void* data, size_t bytes) {
  if (!enabled_ || data == nullptr || bytes == 0) return nullptr;
  if (!budget_) {
    const Expected<uint64_t> available = available_memory_bytes();
    budget_ = available.ok() ? *available / 2 : 0;
  }
  if (used_ + bytes > *budget_) return nullptr;
  AlignedPtr copy = allocate_aligned(bytes);
  if (copy == nullptr) return nullptr;
  std::memcpy(copy.get(), data, bytes);
  used_ += bytes;
  copies_.push_back(std::move(copy));
  return copies_.back().get();
}

}  // namespace pagoda::backend::cpu
