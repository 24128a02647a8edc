#include "backend/cpu/weight_copies.h"

#include <cstring>

#include "core/memory_info.h"

namespace pagoda::backend::cpu {

bool WeightCopies::charge(size_t bytes) {
  if (!budget_) {
    const Expected<uint64_t> available = available_memory_bytes();
    budget_ = available.ok() ? *available / 2 : 0;
  }
  if (used_ + bytes > *budget_) return false;
  used_ += bytes;
  return true;
}

std::byte* WeightCopies::arena_room(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded > arena_left_) {
    if (!charge(kArenaBytes)) return nullptr;
    AlignedPtr arena = allocate_aligned(kArenaBytes);
    if (arena == nullptr) {
      used_ -= kArenaBytes;  // nothing was copied into it
      return nullptr;
    }
    arena_next_ = arena.get();
    arena_left_ = kArenaBytes;
    copies_.push_back(std::move(arena));
  }
  std::byte* room = arena_next_;
  arena_next_ += rounded;
  arena_left_ -= rounded;
  return room;
}

const void* WeightCopies::copy(const void* data, size_t bytes) {
  if (!enabled_ || data == nullptr || bytes == 0) return nullptr;
  std::byte* room = nullptr;
  if (bytes <= kArenaBytes / 2) {
    room = arena_room(bytes);
  } else if (charge(bytes)) {
    AlignedPtr own = allocate_aligned(bytes);
    room = own.get();
    if (own != nullptr) {
      copies_.push_back(std::move(own));
    } else {
      used_ -= bytes;  // nothing was copied
    }
  }
  if (room == nullptr) return nullptr;
  std::memcpy(room, data, bytes);
  return room;
}

}  // namespace pagoda::backend::cpu
