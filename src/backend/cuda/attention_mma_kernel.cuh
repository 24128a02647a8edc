#pragma once
// The kernel of attention_mma.cu (which launches it; see there for what it computes and
// its precision), in a header of its own so that a host emulation of CUDA threads
// (tests/backend/cuda/simt_emulation.h, with its own mma and cp.async) can run the same
// source where no GPU is.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/attention_args.cuh"
#include "backend/cuda/dynamic_shared.cuh"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/mma_ops.cuh"

namespace pagoda::backend::cuda::mma_attention {
// Internal linkage: the kernels' host stubs (nvcc) and their emulation (tests) must not
// share names in one binary.
namespace {

constexpr int kTile = 64;           // positions per tile (kSplitPositions: a split is one tile)
constexpr int kPad = 8;             // f16 values of padding after each shared row (see shared_stride)
constexpr int kMaxWarps = 4;        // 64 (row, head) pairs a block
constexpr int kLargeHeadWarps = 2;  // head sizes above 128: 32 pairs, for shared memory
static_assert(kTile == kSplitPositions, "a split is one tile");

// f16 values per shared row of a head of D values: D + kPad, so that the 8 rows a
// fragment load touches (lanes 4 apart) start 4 banks apart and the 32 lanes hit 32 banks.
template <int D>
constexpr int shared_stride = D + kPad;

// The head size a kernel instance is built for: 64, 128 or 256 (smaller heads are padded
// with zero values, which add exact zeros to every product).
inline int padded_head_dim(int32_t head_dim) {
  return head_dim <= 64 ? 64 : head_dim <= 128 ? 128 : 256;
}

__device__ __forceinline__ uint32_t pack_halves(__half low, __half high) {
  return static_cast<uint32_t>(__half_as_ushort(low)) | (static_cast<uint32_t>(__half_as_ushort(high)) << 16);
}

// The f16 pair (hi, lo) of two f32 values: hi = f16(x), lo = f16(x - hi), packed as the
// mma operands want them (the first value in the low half).
__device__ __forceinline__ void split_pair(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half h0 = __float2half_rn(x0), h1 = __float2half_rn(x1);
  hi = pack_halves(h0, h1);
  lo = pack_halves(__float2half_rn(x0 - __half2float(h0)), __float2half_rn(x1 - __half2float(h1)));
}

__device__ __forceinline__ uint32_t load_pair(const __half* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// The two lanes of a quad that hold the other quarters of a row: max and sum over four
// lanes, combined in the same order on all four (so all four hold the same bits).
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// A (query row, head) pair of the block: where it is and how far it reads in this split.
struct Pair {
  int32_t row = 0, head = 0, row_splits = 0;
  int32_t limit = 0;  // one past the last position it attends to in this split
  bool active = false;
};

__device__ inline Pair pair_of(const AttentionArgs& a, const DeviceSequence& seq, int32_t first_row, int32_t rows_end,
                        int32_t kv_head, int32_t chunk, int32_t split, int m) {
  Pair p;
  p.row = first_row + m / a.heads_per_block;
  const int32_t head_in_group = chunk * a.heads_per_block + m % a.heads_per_block;
  p.head = kv_head * a.group + head_in_group;
  if (p.row >= rows_end || head_in_group >= a.group) return p;
  const int32_t n_positions = attended_positions(seq, p.row);
  p.row_splits = splits_of(a, n_positions);
  p.active = split < p.row_splits;
  if (p.active) p.limit = split_end(split, p.row_splits, n_positions);
  return p;
}

// The block's queries as f16 halves: q_hi and q_lo [pairs][shared_stride<D>], zero for
// pairs the block does not take and for values past head_dim.
template <int D>
__device__ void load_queries(const AttentionArgs& a, int32_t first_row, int32_t rows_end, int32_t kv_head,
                             int32_t chunk, int pairs, __half* q_hi, __half* q_lo) {
  for (int i = static_cast<int>(threadIdx.x); i < pairs * (D / 2); i += static_cast<int>(blockDim.x)) {
    const int m = i / (D / 2), d = 2 * (i % (D / 2));
    const int32_t row = first_row + m / a.heads_per_block;
    const int32_t head_in_group = chunk * a.heads_per_block + m % a.heads_per_block;
    float x0 = 0.0f, x1 = 0.0f;
    if (row < rows_end && head_in_group < a.group && d < a.head_dim) {
      const float* q = reinterpret_cast<const float*>(a.q + row * a.q_token_bytes +
                                                      (kv_head * a.group + head_in_group) * a.q_head_bytes);
      x0 = q[d];
      x1 = q[d + 1];
    }
    uint32_t hi, lo;
    split_pair(x0, x1, hi, lo);
    *reinterpret_cast<uint32_t*>(q_hi + m * shared_stride<D> + d) = hi;
    *reinterpret_cast<uint32_t*>(q_lo + m * shared_stride<D> + d) = lo;
  }
}

// The tile of positions [start, start + n_tile) of KV head kv_head into k_tile and v_tile
// [kTile][shared_stride<D>] (positions past n_tile and values past head_dim: zeros).
template <int D>
__device__ void load_tile(const AttentionArgs& a, const DeviceSequence& seq, int32_t kv_head, int32_t start,
                          int n_tile, int64_t* slots, __half* k_tile, __half* v_tile) {
  for (int i = static_cast<int>(threadIdx.x); i < n_tile; i += static_cast<int>(blockDim.x)) {
    const int32_t p = start + i;
    const int64_t block = a.block_tables[seq.table_offset + p / a.block_size];
    slots[i] = block * a.block_size + p % a.block_size;
  }
  __syncthreads();
  constexpr int kPieces = D / 8;  // 16-byte pieces of a shared row
  const int head_pieces = a.head_dim / 8;
  for (int i = static_cast<int>(threadIdx.x); i < kTile * kPieces; i += static_cast<int>(blockDim.x)) {
    const int position = i / kPieces, piece = i % kPieces;
    __half* k = k_tile + position * shared_stride<D> + piece * 8;
    __half* v = v_tile + position * shared_stride<D> + piece * 8;
    if (position < n_tile && piece < head_pieces) {
      const int64_t offset =
          slots[position] * a.slot_bytes + static_cast<int64_t>(kv_head * a.head_dim + piece * 8) * sizeof(__half);
      copy_16_async(k, a.k_cache + offset);
      copy_16_async(v, a.v_cache + offset);
    } else {
      *reinterpret_cast<uint4*>(k) = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(v) = make_uint4(0, 0, 0, 0);
    }
  }
  wait_async_copies();
  __syncthreads();
}

// One warp's state: for its pairs g and g + 8 (g = lane / 4), the running max and sum,
// and O[16 pairs][D] as mma accumulators (o[n] holds values 8 n + 2 (lane % 4), +1).
template <int D>
struct WarpState {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.0f, 0.0f};
  float o[D / 8][4] = {};
};

// Folds the tile at `start` into the warp's state: limit[i] bounds pair g + 8 i's positions.
template <int D>
__device__ void attend_tile(const AttentionArgs& a, const __half* q_hi, const __half* q_lo, const __half* k_tile,
                            const __half* v_tile, int32_t start, const int32_t (&limit)[2], WarpState<D>& st) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int g = lane / 4, t = lane % 4;
  constexpr int S = shared_stride<D>;
  // S = q K^T: s[j] holds pairs g, g + 8 at positions 8 j + 2 t, +1.
  float s[kTile / 8][4] = {};
  const __half* qh = q_hi + (warp * 16 + g) * S + 2 * t;
  const __half* ql = q_lo + (warp * 16 + g) * S + 2 * t;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t hi[4] = {load_pair(qh + kk * 16), load_pair(qh + 8 * S + kk * 16), load_pair(qh + kk * 16 + 8),
                            load_pair(qh + 8 * S + kk * 16 + 8)};
    const uint32_t lo[4] = {load_pair(ql + kk * 16), load_pair(ql + 8 * S + kk * 16), load_pair(ql + kk * 16 + 8),
                            load_pair(ql + 8 * S + kk * 16 + 8)};
#pragma unroll
    for (int j = 0; j < kTile / 8; ++j) {
      const __half* k = k_tile + (8 * j + g) * S + kk * 16 + 2 * t;
      const uint32_t b0 = load_pair(k), b1 = load_pair(k + 8);
      mma_16x8x16(s[j], lo, b0, b1);
      mma_16x8x16(s[j], hi, b0, b1);
    }
  }
  // The online softmax, pair by pair: positions past the pair's limit score -inf.
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTile / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int32_t position = start + 8 * j + 2 * t + e;
        float& score = s[j][2 * i + e];
        score = position < limit[i] ? score * a.scale : -INFINITY;
        tile_max = fmaxf(tile_max, score);
      }
    }
    const float new_max = fmaxf(st.max[i], quad_max(tile_max));
    // Nothing finite seen yet (a pair with no positions here, or infinite inputs): zeros.
    const bool empty = new_max == -INFINITY;
    const float correction = empty ? 1.0f : expf(st.max[i] - new_max);  // expf(-inf) = 0 at the start
    float tile_sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kTile / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& w = s[j][2 * i + e];
        w = empty ? 0.0f : expf(w - new_max);
        tile_sum += w;
      }
    }
    st.sum[i] = st.sum[i] * correction + quad_sum(tile_sum);
    st.max[i] = new_max;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      st.o[n][2 * i] *= correction;
      st.o[n][2 * i + 1] *= correction;
    }
  }
  // O += P V, 16 positions a step: P's fragment is s's accumulators of tiles 2c and 2c + 1.
#pragma unroll
  for (int c = 0; c < kTile / 16; ++c) {
    uint32_t hi[4], lo[4];
    split_pair(s[2 * c][0], s[2 * c][1], hi[0], lo[0]);
    split_pair(s[2 * c][2], s[2 * c][3], hi[1], lo[1]);
    split_pair(s[2 * c + 1][0], s[2 * c + 1][1], hi[2], lo[2]);
    split_pair(s[2 * c + 1][2], s[2 * c + 1][3], hi[3], lo[3]);
    const __half* v = v_tile + (16 * c + 2 * t) * S + g;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const __half* column = v + 8 * n;
      const uint32_t b0 = pack_halves(column[0], column[S]);
      const uint32_t b1 = pack_halves(column[8 * S], column[9 * S]);
      mma_16x8x16(st.o[n], lo, b0, b1);
      mma_16x8x16(st.o[n], hi, b0, b1);
    }
  }
}

template <int D>
__global__ void __launch_bounds__(kMaxWarps * 32) attention_mma_kernel(AttentionArgs a) {
  allow_next_kernel();  // the output projection's matmul may start streaming its weights
  PAGODA_DYNAMIC_SHARED(uint4, shared_memory);  // 16-byte aligned, carved below
  __shared__ int64_t slots[kTile];
  BlockSpan span;
  if (!block_span(a, &span)) return;  // the whole block
  const DeviceSequence& seq = span.seq;
  const int32_t first_row = span.first_row, rows_end = span.rows_end, kv_head = span.kv_head;
  const int32_t chunk = span.chunk, split = span.split, begin = span.begin, end = span.end;

  constexpr int S = shared_stride<D>;
  const int pairs = static_cast<int>(blockDim.x) / 32 * 16;
  __half* q_hi = reinterpret_cast<__half*>(shared_memory);  // [pairs][S]
  __half* q_lo = q_hi + pairs * S;                            // [pairs][S]
  __half* k_tile = q_lo + pairs * S;                          // [kTile][S]
  __half* v_tile = k_tile + kTile * S;                        // [kTile][S]
  load_queries<D>(a, first_row, rows_end, kv_head, chunk, pairs, q_hi, q_lo);

  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  Pair mine[2];
  int32_t limit[2];
  for (int i = 0; i < 2; ++i) {
    mine[i] = pair_of(a, seq, first_row, rows_end, kv_head, chunk, split, warp * 16 + lane / 4 + 8 * i);
    limit[i] = mine[i].active ? mine[i].limit : begin;
  }
  const bool warp_active = __any_sync(0xffffffffu, mine[0].active || mine[1].active);
  WarpState<D> st;
  for (int32_t start = begin; start < end; start += kTile) {
    const int n_tile = min(kTile, end - start);
    __syncthreads();  // the previous tile (and its slots) have been read; the queries are written
    load_tile<D>(a, seq, kv_head, start, n_tile, slots, k_tile, v_tile);
    if (warp_active) attend_tile<D>(a, q_hi, q_lo, k_tile, v_tile, start, limit, st);
  }
  const int t = lane % 4;
  for (int i = 0; i < 2; ++i) {
    if (!mine[i].active) continue;
    float factor;
    float2* state;
    float* target = result_target(a, mine[i].row, mine[i].head, split, mine[i].row_splits, st.sum[i], &factor, &state);
    if (state != nullptr && t == 0) *state = make_float2(st.max[i], st.sum[i]);
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      const int d = 8 * n + 2 * t;
      if (d < a.head_dim) {
        target[d] = st.o[n][2 * i] * factor;
        target[d + 1] = st.o[n][2 * i + 1] * factor;
      }
    }
  }
}

// Dynamic shared memory of a block of `warps` warps for heads padded to padded_dim: the
// queries (hi and lo) of its pairs and one tile of K and V.
inline size_t shared_bytes(int padded_dim, int warps) {
  return sizeof(__half) * static_cast<size_t>(2 * warps * 16 + 2 * kTile) * static_cast<size_t>(padded_dim + kPad);
}

}  // namespace
}  // namespace pagoda::backend::cuda::mma_attention
