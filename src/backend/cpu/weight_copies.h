#pragma once
// Model weights copied out of the mapped GGUF file into anonymous memory, 2 MiB-aligned
// and advised onto huge pages (aligned_memory.h), which decoding streams faster than the
// mapping: the page cache may hold the file in small pages, scattered, and a core's
// prefetchers stop at each page's end (the single-token matmuls of a 1B model read the
// copies markedly faster; `pagoda bench --mmap` compares). Copies are made as the weights
// are uploaded, while their total stays within half of the memory available at the first
// upload; the rest (a model too large to have twice) stays mapped. The file's own pages
// stay in the page cache, clean: the kernel drops them when it needs the memory.
//
// Weights smaller than half an arena (a layer's attention projections, norms) are packed
// one after another into arenas of kArenaBytes, so that they too lie on huge pages (an
// allocation of its own under kHugePageMinBytes would not) and waste none; larger ones
// get an allocation each.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "backend/cpu/aligned_memory.h"

namespace pagoda::backend::cpu {

class WeightCopies {
 public:
  static constexpr size_t kArenaBytes = size_t{32} << 20;

  // enabled false: nothing is copied (every weight is read where it is mapped).
  explicit WeightCopies(bool enabled) : enabled_(enabled) {}

  // A copy of [data, data + bytes), 64-byte aligned, or nullptr when copies are off, the
  // budget has no room for it or the memory cannot be had.
  const void* copy(const void* data, size_t bytes);
  // Bytes allocated for copies (arenas whole).
  uint64_t bytes_copied() const { return used_; }

 private:
  // Room for `bytes` (rounded to kAlignment) in the current arena or a new one.
  std::byte* arena_room(size_t bytes);
  // Takes `bytes` from the budget, or says there is not enough of it.
  bool charge(size_t bytes);

  bool enabled_;
  std::optional<uint64_t> budget_;  // set at the first copy
  uint64_t used_ = 0;
  std::vector<AlignedPtr> copies_;  // arenas and large weights
  std::byte* arena_next_ = nullptr;  // free space of the current arena
  size_t arena_left_ = 0;            // bytes
};

}  // namespace pagoda::backend::cpu
