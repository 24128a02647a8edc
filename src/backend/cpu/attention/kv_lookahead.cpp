#include "backend/cpu/attention/kv_lookahead.h"

namespace pagoda::backend::cpu {

void KvLookahead::plan(KvStorage& kv, int32_t layer, const AttentionBatch& batch, int n_threads) {
  clear();
  const KvCacheShape& shape = kv.shape();
  if (layer < 0 || layer >= shape.n_layers || n_threads < 1) return;
  const TensorView keys = kv.keys(layer), values = kv.values(layer);
  // A block's rows lie one after another: one range per block, in K and in V.
  const size_t block_bytes = static_cast<size_t>(shape.block_size) * keys.nb[1];
  for (const SequenceAttention& s : batch.sequences) {
    const size_t n_blocks = static_cast<size_t>((s.n_context + shape.block_size - 1) / shape.block_size);
    for (size_t i = 0; i < n_blocks && i < s.block_table.size(); ++i) {
      const int32_t block = s.block_table[i];
      if (block < 0 || block >= shape.n_blocks) continue;  // the attention has refused the batch
      const size_t offset = static_cast<size_t>(block) * block_bytes;
      for (const TensorView* array : {&keys, &values}) {
        const uintptr_t first = reinterpret_cast<uintptr_t>(array->data) + offset;
        ranges_.push_back(first);
        ranges_.push_back(first + block_bytes);
      }
    }
  }
  cursors_.resize(static_cast<size_t>(n_threads));
  for (int t = 0; t < n_threads; ++t) {
    cursors_[static_cast<size_t>(t)] = {.ranges = ranges_.data(),
                                        .n_ranges = ranges_.size() / 2,
                                        .step = static_cast<size_t>(n_threads),
                                        .index = static_cast<size_t>(t)};
  }
}

void KvLookahead::clear() {
  ranges_.clear();
  cursors_.clear();
}

}  // namespace pagoda::backend::cpu
