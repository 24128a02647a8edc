#pragma once
// Shape of the KV cache memory: for each layer, K and V arrays of
// [n_blocks][block_size][n_kv_heads][head_dim] values of `type`, allocated once by the
// backend from a memory budget. The bookkeeping of which block holds what is kv/'s
// job; this is only the storage.

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace pagoda::backend {

struct KvCacheShape {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t block_size = 16;  // tokens per block
  int32_t n_blocks = 0;
  DType type = DType::F16;  // F16 (default), F32 or Q8_0

  // Bytes of one token's K (or V) in one layer.
  size_t token_bytes() const {
    return static_cast<size_t>(row_bytes(type, static_cast<int64_t>(n_kv_heads) * head_dim));
  }
  // Bytes of one block across K and V of every layer: the unit a memory budget buys.
  size_t block_bytes() const { return 2 * token_bytes() * block_size * n_layers; }
};

// Copy every layer's K and V rows of block `src` over those of block `dst`: the
// copy-on-write of a shared block before a step writes into it.
struct KvBlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
};

}  // namespace pagoda::backend
