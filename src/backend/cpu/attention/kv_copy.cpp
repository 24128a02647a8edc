#include "backend/cpu/attention/kv_copy.h"

#include <cstring>
#include <string>

namespace pagoda::backend::cpu {
namespace {

// Array `index` of the storage: layer index / 2, K for even indices, V for odd ones.
TensorView kv_array(KvStorage& kv, int32_t index) {
  return index % 2 == 0 ? kv.keys(index / 2) : kv.values(index / 2);
}

}  // namespace

Status copy_kv_blocks(ThreadPool& pool, KvStorage& kv, std::span<const KvBlockCopy> copies) {
  const KvCacheShape& shape = kv.shape();
  for (const KvBlockCopy& copy : copies) {
    if (copy.src < 0 || copy.src >= shape.n_blocks || copy.dst < 0 || copy.dst >= shape.n_blocks) {
      return invalid_argument("kv block copy " + std::to_string(copy.src) + " -> " +
                              std::to_string(copy.dst) + " is outside the " +
                              std::to_string(shape.n_blocks) + " blocks of the cache");
    }
  }
  if (copies.empty()) return Status::ok_status();
  // A block is block_size consecutive token rows of every array (kv_storage.h).
  const size_t block_bytes = shape.token_bytes() * static_cast<size_t>(shape.block_size);
  pool.parallel_for(2 * static_cast<int64_t>(shape.n_layers), [&](int64_t array, int) {
    const TensorView rows = kv_array(kv, static_cast<int32_t>(array));
    char* base = static_cast<char*>(rows.data);
    for (const KvBlockCopy& copy : copies) {
      if (copy.src == copy.dst) continue;
      std::memcpy(base + static_cast<size_t>(copy.dst) * block_bytes,
                  base + static_cast<size_t>(copy.src) * block_bytes, block_bytes);
    }
  });
  return Status::ok_status();
}

}  // namespace pagoda::backend::cpu
