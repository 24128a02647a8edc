#pragma once
// Forward batches for one sequence whose KV cache is a contiguous run of blocks
// 0, 1, 2, ... (the single-sequence generator and the benchmark): token p of the
// sequence lives in KV slot p. The paged, multi-sequence batches are the scheduler's.

#include <cstdint>
#include <span>
#include <vector>

#include "backend/kv_storage.h"
#include "model/config.h"
#include "model/forward_batch.h"

namespace pagoda::engine {

// A KV cache shape holding n_ctx tokens of `config`'s model (rounded up to whole blocks).
backend::KvCacheShape contiguous_kv_shape(const model::ModelConfig& config, int32_t n_ctx,
                                          int32_t block_size = 16, DType type = DType::F16);

class ContiguousSequence {
 public:
  // kv: the storage the batches will write to; its blocks make up the sequence.
  explicit ContiguousSequence(const backend::KvCacheShape& kv);

  int32_t capacity() const { return static_cast<int32_t>(block_table_.size()) * block_size_; }

  // The batch running `tokens` at positions [first_position, first_position + n), with
  // the last row's logits when `want_logits`. Valid until the next call; `tokens` must
  // outlive it. The caller keeps first_position + n <= capacity().
  model::ForwardBatch batch(std::span<const int32_t> tokens, int32_t first_position,
                            bool want_logits);

 private:
  int32_t block_size_;
  std::vector<int32_t> block_table_;  // [n_blocks] 0, 1, 2, ...
  std::vector<int32_t> positions_;    // [capacity] scratch
  std::vector<int64_t> slots_;        // [capacity] scratch
  backend::SequenceAttention sequence_;
  int32_t logit_row_ = 0;
};

}  // namespace pagoda::engine
