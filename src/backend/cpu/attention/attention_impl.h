#pragma once
// Internals of the attention op shared by its schedules (attention.h has the overview).

#include <cstddef>
#include <cstdint>

#include "backend/attention_batch.h"
#include "backend/cpu/attention/attention_kernels.h"
#include "backend/tensor.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

// Everything a schedule reads, resolved once per call.
struct AttentionContext {
  TensorView q;    // [n_tokens][n_heads][head_dim] f32 head view
  TensorView out;  // [n_tokens][n_heads * head_dim] f32
  const std::byte* k_cache = nullptr;  // this layer's K rows, one per slot
  const std::byte* v_cache = nullptr;
  size_t cache_row_bytes = 0;  // bytes per slot (all KV heads)
  size_t head_bytes = 0;       // bytes of one KV head in a slot
  DType cache_type = DType::F16;
  int32_t block_size = 0, head_dim = 0, n_heads = 0, group = 1;  // group: query heads per KV head
  float scale = 1.0f;
  const quant::DotKernel* k_dot = nullptr;  // K rows . Q (Q converted to k_dot->activation)
  const AttentionKernels* kernels = nullptr;

  int64_t slot(const SequenceAttention& s, int64_t pos) const {
    return static_cast<int64_t>(s.block_table[static_cast<size_t>(pos / block_size)]) * block_size +
           pos % block_size;
  }
  const std::byte* key(int64_t slot, int32_t kv_head) const {
    return k_cache + static_cast<size_t>(slot) * cache_row_bytes + static_cast<size_t>(kv_head) * head_bytes;
  }
  const std::byte* value(int64_t slot, int32_t kv_head) const {
    return v_cache + static_cast<size_t>(slot) * cache_row_bytes + static_cast<size_t>(kv_head) * head_bytes;
  }
  const float* query(int64_t row, int32_t head) const { return q.row<const float>(head, row); }
  float* output(int64_t row, int32_t head) const { return out.row<float>(row) + static_cast<int64_t>(head) * head_dim; }
};

// Scratch bytes one thread needs for the per-query schedule, and for the tiled one.
size_t vector_scratch_bytes(int32_t head_dim);
size_t tiled_scratch_bytes(int32_t head_dim);

struct SoftmaxState {
  float max;  // largest score seen (-inf if none)
  float sum;  // sum of exp(score - max)
};

// Online softmax of query `row` of `head` over positions [begin, end) of `seq`: leaves
// sum_p exp(score_p - max) v_p (not yet divided by the sum) in vkq[head_dim].
SoftmaxState attend_positions(const AttentionContext& c, const SequenceAttention& seq, int64_t row,
                              int32_t head, int64_t begin, int64_t end, std::byte* scratch, float* vkq);

// The full attention of query `row` of `head`, written to the output.
void attend_query(const AttentionContext& c, const SequenceAttention& seq, int64_t row, int32_t head,
                  std::byte* scratch);

// Queries [q_begin, q_end) (at most 64, indices within `seq`) of `head`, tiled.
void attend_tile(const AttentionContext& c, const SequenceAttention& seq, int32_t head,
                 int32_t q_begin, int32_t q_end, std::byte* scratch);

// Position of query i (0-based within the sequence's new tokens).
inline int64_t query_position(const SequenceAttention& s, int64_t i) {
  return static_cast<int64_t>(s.n_context) - s.n_query + i;
}

}  // namespace pagoda::backend::cpu
