#pragma once
// What the attention op needs to know about one batched forward pass, as plain data
// (DESIGN.md invariant 3: attention metadata travels in the batch, never in globals).
//
// The batch's tokens are grouped by sequence: sequence s owns query rows
// [query_start, query_start + n_query). Its new tokens sit at positions
// [n_context - n_query, n_context), right after the n_context - n_query tokens already
// in the KV cache. Each query attends causally to every cached token and to the new
// tokens up to its own position. A sequence's tokens live in KV blocks of
// `block_size` tokens; token p is in block block_table[p / block_size], row
// p % block_size.

#include <cstdint>
#include <span>

namespace pagoda::backend {

struct SequenceAttention {
  int32_t query_start = 0;  // first row of this sequence in the batch
  int32_t n_query = 0;      // new tokens this step
  int32_t n_context = 0;    // tokens in context after this step (cached + new)
  std::span<const int32_t> block_table;  // KV block ids, ceil(n_context / block_size) used
};

struct AttentionBatch {
  std::span<const SequenceAttention> sequences;
  // Per batch row: the KV slot (block_id * block_size + row in block) its K and V go to.
  std::span<const int64_t> slot_mapping;
  int32_t block_size = 16;
};

}  // namespace pagoda::backend
