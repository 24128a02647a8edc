#include "engine/sequence_batch.h"

#include <numeric>

#include "model/model.h"

namespace pagoda::engine {

backend::KvCacheShape contiguous_kv_shape(const model::ModelConfig& config, int32_t n_ctx,
                                          int32_t block_size, DType type) {
  return model::kv_cache_shape(config, (n_ctx + block_size - 1) / block_size, block_size, type);
}

ContiguousSequence::ContiguousSequence(const backend::KvCacheShape& kv)
    : block_size_(kv.block_size), block_table_(static_cast<size_t>(kv.n_blocks)) {
  std::iota(block_table_.begin(), block_table_.end(), 0);
  positions_.resize(static_cast<size_t>(capacity()));
  slots_.resize(static_cast<size_t>(capacity()));
}

model::ForwardBatch ContiguousSequence::batch(std::span<const int32_t> tokens,
                                              int32_t first_position, bool want_logits) {
  const auto n = static_cast<int32_t>(tokens.size());
  for (int32_t i = 0; i < n; ++i) {
    positions_[static_cast<size_t>(i)] = first_position + i;
    slots_[static_cast<size_t>(i)] = first_position + i;  // block p / bs is block p / bs
  }
  sequence_ = backend::SequenceAttention{0, n, first_position + n, block_table_};
  logit_row_ = n - 1;
  model::ForwardBatch batch;
  batch.token_ids = tokens;
  batch.positions = std::span<const int32_t>(positions_).first(tokens.size());
  batch.attention.sequences = std::span<const backend::SequenceAttention>(&sequence_, 1);
  batch.attention.slot_mapping = std::span<const int64_t>(slots_).first(tokens.size());
  batch.attention.block_size = block_size_;
  if (want_logits && n > 0) batch.logit_rows = std::span<const int32_t>(&logit_row_, 1);
  return batch;
}

}  // namespace pagoda::engine
