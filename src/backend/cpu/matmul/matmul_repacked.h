#pragma once
// Model weights kept repacked for the strip kernels (TileKernel::repack), so that the
// matmuls of batched steps multiply them as they are instead of repacking each panel
// again on every call. Decoding 16 sequences, repacking had been a third to a half of a
// matmul's time; with the strips kept, the weights stream from memory once per step in
// the kernels' own layout. The kept strips are exactly what the kernel would have
// repacked: the same bits either way.
//
// Only weights the backend was handed by upload_weight are kept (they do not change
// while the backend lives), within a byte budget, in the order batched matmuls first
// use them; each is repacked once, over the thread pool, on that first use. The others
// take the kernels' own repacking. Tiles of fewer than kMinStripTokens tokens read the
// rows as stored, except for the kernels whose kept copies serve them too
// (TileKernel::kept_for_single_tokens_up_to).

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "core/dtype.h"
#include "core/thread_pool.h"

namespace pagoda::backend::cpu {

// The rows of one weight, as the matmul plans them.
struct WeightRows {
  const std::byte* data = nullptr;  // first row
  DType type = DType::F32;
  int64_t n_rows = 0, n_in = 0;
  size_t stride = 0;  // bytes between rows

  auto operator<=>(const WeightRows&) const = default;
};

class RepackedWeights {
 public:
  explicit RepackedWeights(size_t budget_bytes) : budget_(budget_bytes) {}

  // [data, data + bytes) holds model weights that stay unchanged while this object lives.
  void add_weight(const void* data, size_t bytes);
  // The rows of `w` repacked by kernel.repack (made on the first call for these rows), or
  // nullptr: they are not within a weight added, the kernel does not repack, or the
  // budget has no room for them.
  const std::byte* find(ThreadPool& pool, const WeightRows& w, const TileKernel& kernel);
  size_t bytes_used() const { return used_; }

 private:
  bool is_weight(const WeightRows& w) const;

  size_t budget_;
  size_t used_ = 0;
  std::vector<std::pair<uintptr_t, uintptr_t>> weights_;  // [begin, end) byte ranges
  std::map<WeightRows, AlignedPtr> strips_;               // nullptr: no room (not retried)
};

}  // namespace pagoda::backend::cpu
