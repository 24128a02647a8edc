#pragma once
// The scalar attention kernel and the merge of splits (attention.cu launches them; see
// there for what they compute), in a header of their own so that a host emulation of CUDA
// threads (tests/backend/cuda/simt_emulation.h) can run the same source where no GPU is.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_args.cuh"
#include "backend/cuda/dynamic_shared.cuh"
#include "backend/cuda/kv_types.cuh"
#include "backend/cuda/launch_order.cuh"

namespace pagoda::backend::cuda::scalar_attention {
// Internal linkage: the kernels' host stubs (nvcc) and their emulation (tests) must not
// share names in one binary.
namespace {

constexpr int kTile = 32;             // positions per tile: one per lane
constexpr int kMaxValuesPerLane = kMaxHeadDim / 32;  // lane l holds values l, l + 32, ...
constexpr int kMaxWarps = 8;          // query heads per block row
constexpr int kMaxBlockWarps = 16;    // warps per block: query heads x rows

__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp's running softmax: max and sum of exp(score - max), and this lane's share of
// sum_p exp(score_p - max) v_p (values lane, lane + 32, ...).
struct RunningSoftmax {
  float max = -INFINITY;
  float sum = 0.0f;
  float acc[kMaxValuesPerLane] = {};
};

// Folds one tile of n_tile positions into the warp's state. q: [head_dim] the warp's
// query; k_tile: [kTile][head_dim + 1] (padded: lane p reading K row p hits bank p + d);
// v_tile: [kTile][head_dim]; weights: [kTile] the warp's own scratch.
__device__ inline void attend_tile(const float* q, const float* k_tile, const float* v_tile, float* weights,
                            int n_tile, int head_dim, float scale, RunningSoftmax& st) {
  const int lane = threadIdx.x % 32;
  float score = -INFINITY;
  if (lane < n_tile) {
    const float* k = k_tile + lane * (head_dim + 1);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;  // four chains, the rest into the first
    int d = 0;
    for (; d + 4 <= head_dim; d += 4) {
      s0 = fmaf(q[d], k[d], s0);
      s1 = fmaf(q[d + 1], k[d + 1], s1);
      s2 = fmaf(q[d + 2], k[d + 2], s2);
      s3 = fmaf(q[d + 3], k[d + 3], s3);
    }
    for (; d < head_dim; ++d) s0 = fmaf(q[d], k[d], s0);
    score = ((s0 + s1) + (s2 + s3)) * scale;
  }
  const float new_max = fmaxf(st.max, warp_max(score));
  // Nothing finite seen yet (only with infinite inputs): keep everything at zero.
  const bool empty = new_max == -INFINITY;
  const float correction = empty ? 1.0f : expf(st.max - new_max);  // expf(-inf) = 0 at the start
  const float w = (lane < n_tile && !empty) ? expf(score - new_max) : 0.0f;
  st.sum = st.sum * correction + warp_sum(w);
  st.max = new_max;
  weights[lane] = w;
  __syncwarp();
#pragma unroll
  for (int j = 0; j < kMaxValuesPerLane; ++j) st.acc[j] *= correction;
  for (int p = 0; p < n_tile; ++p) {
    const float wp = weights[p];
    const float* v = v_tile + p * head_dim + lane;
#pragma unroll
    for (int j = 0; j < kMaxValuesPerLane; ++j) {
      if (lane + 32 * j < head_dim) st.acc[j] = fmaf(wp, v[32 * j], st.acc[j]);
    }
  }
}

// Fills the tile of positions [start, start + n_tile) of KV head `kv_head`: the slots
// first (one table lookup per position), then K and V converted to f32, warp w taking
// positions w, w + warps, ... with lanes over the values.
template <KvType T>
__device__ void load_tile(const AttentionArgs& a, const DeviceSequence& seq, int32_t kv_head,
                          int32_t start, int n_tile, int64_t* slots, float* k_tile, float* v_tile) {
  if (static_cast<int>(threadIdx.x) < n_tile) {
    const int32_t p = start + static_cast<int32_t>(threadIdx.x);
    const int64_t block = a.block_tables[seq.table_offset + p / a.block_size];
    slots[threadIdx.x] = block * a.block_size + p % a.block_size;
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, hd = a.head_dim;
  for (int i = warp; i < n_tile; i += a.heads_per_block * a.rows_per_block) {
    const int64_t offset = slots[i] * a.slot_bytes;
    const char* k = a.k_cache + offset;
    const char* v = a.v_cache + offset;
    for (int d = lane; d < hd; d += 32) {
      k_tile[i * (hd + 1) + d] = load_kv<T>(k, kv_head * hd + d);
      v_tile[i * hd + d] = load_kv<T>(v, kv_head * hd + d);
    }
  }
}

// Writes the warp's result: normalized to the output row, or as a split's partial.
__device__ inline void write_result(const AttentionArgs& a, int32_t row, int32_t head, int32_t split,
                             int32_t row_splits, const RunningSoftmax& st) {
  const int lane = threadIdx.x % 32;
  float factor;
  float2* state;
  float* target = result_target(a, row, head, split, row_splits, st.sum, &factor, &state);
  if (state != nullptr && lane == 0) *state = make_float2(st.max, st.sum);
#pragma unroll
  for (int j = 0; j < kMaxValuesPerLane; ++j) {
    if (lane + 32 * j < a.head_dim) target[lane + 32 * j] = st.acc[j] * factor;
  }
}

template <KvType T>
__global__ void __launch_bounds__(kMaxBlockWarps * 32) attention_kernel(AttentionArgs a) {
  allow_next_kernel();  // the output projection's matmul may start streaming its weights
  PAGODA_DYNAMIC_SHARED(float, smem);  // see the carving below
  __shared__ int64_t slots[kTile];
  BlockSpan span;
  if (!block_span(a, &span)) return;  // the whole block
  const DeviceSequence& seq = span.seq;
  const int32_t first_row = span.first_row, rows_end = span.rows_end, kv_head = span.kv_head, split = span.split;
  const int32_t begin = span.begin, end = span.end;

  const int hd = a.head_dim, warp = threadIdx.x / 32, n_warps = a.heads_per_block * a.rows_per_block;
  float* k_tile = smem;                          // [kTile][hd + 1]
  float* v_tile = k_tile + kTile * (hd + 1);    // [kTile][hd]
  float* q = v_tile + kTile * hd + warp * hd;   // [n_warps][hd]: this warp's
  float* weights = v_tile + kTile * hd + n_warps * hd + warp * kTile;  // [n_warps][kTile]
  // This warp's row and query head, and its positions in this split.
  const int32_t row = first_row + warp / a.heads_per_block;
  const int32_t head_in_group = span.chunk * a.heads_per_block + warp % a.heads_per_block;
  const int32_t head = kv_head * a.group + head_in_group;
  const int32_t n_positions = row < rows_end ? attended_positions(seq, row) : 0;
  const int32_t row_splits = splits_of(a, n_positions);
  // The last chunk of a group may be short; a row may have fewer splits than the block.
  const bool active = row < rows_end && head_in_group < a.group && split < row_splits;
  const int32_t row_end = active ? split_end(split, row_splits, n_positions) : begin;
  if (active) {
    const float* q_row = reinterpret_cast<const float*>(a.q + row * a.q_token_bytes + head * a.q_head_bytes);
    for (int d = threadIdx.x % 32; d < hd; d += 32) q[d] = q_row[d];
  }
  RunningSoftmax st;
  for (int32_t start = begin; start < end; start += kTile) {
    const int n_tile = min(kTile, end - start);
    __syncthreads();  // the previous tile (and its slots) have been read; q is written
    load_tile<T>(a, seq, kv_head, start, n_tile, slots, k_tile, v_tile);
    __syncthreads();
    // The row's own part of the tile: the tiles a row alone in its block would see.
    const int row_tile = min(kTile, row_end - start);
    if (active && row_tile > 0) attend_tile(q, k_tile, v_tile, weights, row_tile, hd, a.scale, st);
  }
  if (active) write_result(a, row, head, split, row_splits, st);
}

// Combines the splits of rows with more than one, in split order. Grid: (piece rows,
// n_heads); one warp, lanes over head_dim.
__global__ void merge_splits_kernel(AttentionArgs a) {
  allow_next_kernel();
  const int32_t row = a.row_begin + static_cast<int32_t>(blockIdx.x);
  const int32_t head = blockIdx.y;
  const DeviceSequence seq = a.sequences[a.row_sequence[row]];
  const int32_t row_splits = splits_of(a, attended_positions(seq, row));
  if (row_splits <= 1) return;  // written directly
  const int64_t first = (static_cast<int64_t>(blockIdx.x) * a.n_heads + head) * a.n_splits;
  float max = -INFINITY;
  for (int32_t s = 0; s < row_splits; ++s) max = fmaxf(max, a.partial_state[first + s].x);
  const int lane = threadIdx.x;
  float acc[kMaxValuesPerLane] = {};
  float sum = 0.0f;
  for (int32_t s = 0; s < row_splits; ++s) {
    const float2 state = a.partial_state[first + s];
    const float w = state.x == -INFINITY ? 0.0f : expf(state.x - max);
    sum += state.y * w;
    const float* part = a.partial_out + (first + s) * a.head_dim;
#pragma unroll
    for (int j = 0; j < kMaxValuesPerLane; ++j) {
      if (lane + 32 * j < a.head_dim) acc[j] = fmaf(part[lane + 32 * j], w, acc[j]);
    }
  }
  const float factor = sum == 0.0f ? 0.0f : 1.0f / sum;
  float* target = reinterpret_cast<float*>(a.out + row * a.out_row_bytes) + head * a.head_dim;
#pragma unroll
  for (int j = 0; j < kMaxValuesPerLane; ++j) {
    if (lane + 32 * j < a.head_dim) target[lane + 32 * j] = acc[j] * factor;
  }
}

// Dynamic shared memory of a block of `warps` warps: a tile of K (padded) and V, and
// each warp's query and weights.
inline size_t shared_bytes(int32_t head_dim, int32_t warps) {
  return sizeof(float) * (static_cast<size_t>(kTile) * (2 * head_dim + 1) +
                          static_cast<size_t>(warps) * (head_dim + kTile));
}

}  // namespace
}  // namespace pagoda::backend::cuda::scalar_attention

namespace pagoda::backend::cuda {

// The query heads and rows a block of either kernel takes, as attention() sets them for a
// launch (a.tensor_cores, a.group and a.head_dim set). Heads: a block row takes its KV
// head's group up to the kernel's limit (larger groups take several blocks, head_chunks).
// Rows: with row_groups, a step with prompt rows (max_n_query > 1) puts several rows of
// a sequence in a block, so that each K/V tile serves them all; decoding rows go one a
// block.
inline void set_block_shape(AttentionArgs& a, int32_t max_n_query, bool row_groups) {
  const int32_t most = a.tensor_cores ? attention_mma_block_rows(a.head_dim) : 0;
  const int32_t most_heads = a.tensor_cores ? most : scalar_attention::kMaxWarps;
  a.heads_per_block = a.group < most_heads ? a.group : most_heads;
  a.head_chunks = (a.group + a.heads_per_block - 1) / a.heads_per_block;
  const int32_t most_rows = a.tensor_cores ? most : scalar_attention::kMaxBlockWarps;
  const int32_t rows = most_rows / a.heads_per_block;
  a.rows_per_block = row_groups && max_n_query > 1 && rows > 1 ? rows : 1;
}

}  // namespace pagoda::backend::cuda
