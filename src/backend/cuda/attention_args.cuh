#pragma once
// Internal to the CUDA attention: the arguments its kernels share, and attention_rows.h's
// rules (which rows a block takes, where a row's splits begin and end) applied to them.
// attention.cu has the host side, attention_kernels.cuh the scalar kernel and the merge
// of splits, attention_mma_kernel.cuh the kernel on tensor cores. Both follow these rules, so that a row's
// splits (and so its result) depend on its own positions only.

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "backend/cuda/attention_rows.h"
#include "backend/cuda/context.h"
#include "backend/cuda/ops.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

struct AttentionArgs {
  const char* q;            // head view [n_tokens][n_heads][head_dim] f32
  int64_t q_head_bytes;     // q.nb[1]
  int64_t q_token_bytes;    // q.nb[2]
  const char* k_cache;      // this layer's K: one row of n_kv_heads heads per slot
  const char* v_cache;
  int64_t slot_bytes;       // bytes per slot
  char* out;                // [n_tokens][n_heads * head_dim] f32
  int64_t out_row_bytes;
  // Split rows: [piece row][head][split][head_dim] outputs and [piece row][head][split]
  // (max, sum); unused (null) when n_splits == 1.
  float* partial_out;
  float2* partial_state;
  const DeviceSequence* sequences;
  const int32_t* block_tables;
  const int32_t* row_sequence;
  int32_t row_begin;        // first batch row of this launch (rows go in pieces)
  int32_t row_end;          // one past its last
  int32_t n_heads, group, head_dim, block_size;
  int32_t heads_per_block;  // query heads of one KV head's group a block takes per row
  int32_t rows_per_block;   // query rows per block
  int32_t head_chunks;      // blocks per KV head: ceil(group / heads_per_block)
  int32_t n_splits;         // grid z
  float scale;
  bool tensor_cores;        // attention_mma.cu's kernel, not the scalar one
};

// attention_rows.h's rules for this launch.
__device__ inline int32_t splits_of(const AttentionArgs& a, int32_t n_positions) {
  return splits_of(n_positions, a.n_splits);
}

__device__ inline bool block_rows(const AttentionArgs& a, const DeviceSequence& seq, int32_t first_row,
                                  int32_t* end) {
  return block_rows(a.row_begin, a.row_end, a.rows_per_block, seq, first_row, end);
}

// What the block of (blockIdx.x, blockIdx.y, blockIdx.z) takes: the query rows
// [first_row, rows_end) of one sequence, the query heads of head chunk `chunk` of KV head
// kv_head's group, and the positions [begin, end) of split `split` (the block's last row
// attends to the most: its splits bound the block's).
struct BlockSpan {
  DeviceSequence seq;
  int32_t first_row, rows_end, kv_head, chunk, split, begin, end;
};

// The block's span; false where it takes nothing (the whole block leaves): a row before
// its first in the same group takes its rows, or its rows have fewer splits.
__device__ inline bool block_span(const AttentionArgs& a, BlockSpan* b) {
  b->first_row = a.row_begin + static_cast<int32_t>(blockIdx.x);
  b->kv_head = static_cast<int32_t>(blockIdx.y) / a.head_chunks;
  b->chunk = static_cast<int32_t>(blockIdx.y) % a.head_chunks;
  b->split = static_cast<int32_t>(blockIdx.z);
  b->seq = a.sequences[a.row_sequence[b->first_row]];
  if (!block_rows(a, b->seq, b->first_row, &b->rows_end)) return false;
  const int32_t last_positions = attended_positions(b->seq, b->rows_end - 1);
  const int32_t last_splits = splits_of(a, last_positions);
  if (b->split >= last_splits) return false;
  b->begin = b->split * kSplitPositions;
  b->end = split_end(b->split, last_splits, last_positions);
  return true;
}

// Opts `kernel` in to `bytes` of dynamic shared memory a block, where that is above the
// default 48 KiB. Once per device (the call waits for the device's copies).
inline Status opt_in_shared_memory(const void* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return {};
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) {
    cudaGetLastError();
    return internal_error(std::string("attention: shared memory: ") + cudaGetErrorString(e));
  }
  return {};
}

// Where split `split` of a row's result goes: its output row (with 1 / sum as the factor)
// when the row has one split, else the split's partial (factor 1, and (max, sum) written
// by the caller through *state).
__device__ inline float* result_target(const AttentionArgs& a, int32_t row, int32_t head, int32_t split,
                                       int32_t row_splits, float sum, float* factor, float2** state) {
  if (row_splits == 1) {
    *factor = sum == 0.0f ? 0.0f : 1.0f / sum;
    *state = nullptr;
    return reinterpret_cast<float*>(a.out + row * a.out_row_bytes) + head * a.head_dim;
  }
  const int64_t index = (static_cast<int64_t>(row - a.row_begin) * a.n_heads + head) * a.n_splits + split;
  *factor = 1.0f;
  *state = a.partial_state + index;
  return a.partial_out + index * a.head_dim;
}

// --- the kernel on tensor cores (attention_mma.cu) ----------------------------------

// Whether it takes this head size (a multiple of 16, at most kMaxHeadDim).
bool attention_mma_takes_head_dim(int32_t head_dim);

// The most query rows x heads one of its blocks takes for this head size.
int32_t attention_mma_block_rows(int32_t head_dim);

// Sets what its launches need once (the shared memory its larger head sizes use, where
// the device allows it): the attribute call waits for the device's copies, so it stays
// out of the steps.
Status prepare_attention_mma(const Context& ctx);

// Whether the device gives its blocks for this head size the shared memory they use.
bool attention_mma_fits(const Context& ctx, int32_t head_dim);

// Launches it over `grid` (x: the launch's rows, y: KV heads x head chunks, z: splits).
Status launch_attention_mma(const Context& ctx, const AttentionArgs& a, dim3 grid);

}  // namespace pagoda::backend::cuda
