#pragma once
// The staged few-token kernel of matmul_vec_staged.cu (which launches it; see there for
// what it computes and how its warps stage tiles), in a header of its own so that a host
// emulation of CUDA threads (tests/backend/cuda/simt_emulation.h) can run the same source
// where no GPU is.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "backend/cuda/chunk_dot.cuh"
#include "backend/cuda/host_device.h"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/matmul_vec_targets.cuh"
#include "backend/cuda/matmul_vec_tiling.h"
#include "backend/cuda/quant_blocks.cuh"

namespace pagoda::backend::cuda::weights::staged_kernel {
// Internal linkage: the kernels' host stubs (nvcc) and their emulation (tests) must not
// share names in one binary.
namespace {

constexpr int kWarpSize = kVecWarpSize;
constexpr int kWarpsPerBlock = 4;
constexpr int kSegmentBytes = kVecSegmentBytes;

// How a weight format's rows are cut into tiles (matmul_vec_tiling.h).
template <DType T>
struct Tiling {
  static constexpr VecTiling kGeometry = vec_tiling(WeightFormat<T>::kValues, WeightFormat<T>::kBytes);
  static constexpr int kChunksPerLane = kGeometry.chunks_per_lane;
  static constexpr int kChunks = kGeometry.chunks;
  static constexpr int kSegmentsPerLane = kGeometry.segments_per_lane;
  static constexpr int kSharedBytes = kGeometry.shared_bytes;
};

struct Args {
  VecTargets targets;
  int64_t row_bytes = 0;  // bytes of one row's values
  int64_t n_in = 0;
  int64_t n_chunks = 0;   // chunks of 32 values per row (the last may be partial: plain types)
  int n_tiles = 0;        // tiles per row
  const float* x = nullptr;  // [n_tokens][n_in], rows x_stride floats apart
  int64_t x_stride = 0;
  int64_t y_stride = 0;   // every target's y (and SwiGLU's out)
  int n_tokens = 0;       // 1..kVecMaxTokens
  bool x_aligned = false; // x and x_stride * 4 are multiples of 16 bytes: float4 loads
};

// The 16 bytes at p, of which only those in [lo, hi) are read (the others are zero): the
// segments at either end of a weight matrix, which may start before it or end after it.
__device__ PAGODA_NOINLINE inline uint4 load_partial(const uint8_t* p, const uint8_t* lo, const uint8_t* hi) {
  uint8_t bytes[kSegmentBytes];
#pragma unroll
  for (int i = 0; i < kSegmentBytes; ++i) bytes[i] = (p + i >= lo && p + i < hi) ? p[i] : uint8_t{0};
  uint4 v;
  memcpy(&v, bytes, sizeof(v));
  return v;
}

// A tile's bytes in flight: this lane's segments of [begin, end), aligned down to 16.
template <int kSegmentsPerLane>
struct TileLoad {
  uint4 segment[kSegmentsPerLane];
  int offset;  // begin - the aligned start: where the tile's first byte lands in shared memory
};

template <int kSegmentsPerLane>
__device__ __forceinline__ void load_tile(const VecTileSpan& span, const uint8_t* lo, const uint8_t* hi, int lane,
                                          TileLoad<kSegmentsPerLane>& load) {
  const uint8_t* base = reinterpret_cast<const uint8_t*>(span.base);
  load.offset = span.offset;
  const int n_segments = span.n_segments;
#pragma unroll
  for (int i = 0; i < kSegmentsPerLane; ++i) {
    const int s = lane + kWarpSize * i;
    const uint8_t* p = base + static_cast<int64_t>(s) * kSegmentBytes;
    if (s >= n_segments) {
      load.segment[i] = make_uint4(0, 0, 0, 0);  // past the tile: stored, never read
    } else if (p >= lo && p + kSegmentBytes <= hi) {
      load.segment[i] = __ldg(reinterpret_cast<const uint4*>(p));
    } else {
      load.segment[i] = load_partial(p, lo, hi);
    }
  }
}

template <int kSegmentsPerLane>
__device__ __forceinline__ void store_tile(const TileLoad<kSegmentsPerLane>& load, uint8_t* shared, int lane) {
#pragma unroll
  for (int i = 0; i < kSegmentsPerLane; ++i) {
    reinterpret_cast<uint4*>(shared)[lane + kWarpSize * i] = load.segment[i];
  }
}

// acc[t] += this lane's chunks of tile `tile` (in shared memory at tile_bytes) . x[t].
template <DType T, int kTokens>
__device__ __forceinline__ void multiply_tile(const Args& a, const uint8_t* tile_bytes, int tile, int lane,
                                              float (&acc)[kTokens]) {
  using Tile = Tiling<T>;
#pragma unroll
  for (int k = 0; k < Tile::kChunksPerLane; ++k) {
    const int local = lane + kWarpSize * k;
    const int64_t c = static_cast<int64_t>(tile) * Tile::kChunks + local;
    if (c >= a.n_chunks) break;
    const int count = static_cast<int>(min(static_cast<int64_t>(kChunkValues), a.n_in - c * kChunkValues));
    float v[32];
    WeightFormat<T>::chunk(tile_bytes + vec_chunk_block_offset(Tile::kGeometry, 0, local),
                           vec_chunk_in_block(Tile::kGeometry, local), count, v);
    const float* x_chunk = a.x + c * kChunkValues;
    dot_chunk_tokens(v, x_chunk, a.x_stride, a.n_tokens, count, a.x_aligned, acc);
  }
}

// Adds every lane's acc across the warp; returns acc[lane] (lanes >= n_tokens: 0), so that
// lane t writes token t's output.
template <int kTokens>
__device__ __forceinline__ float warp_sums(float (&acc)[kTokens], int n_tokens, int lane) {
  float mine = 0.0f;
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    if (t < n_tokens) {  // the same for every lane
#pragma unroll
      for (int offset = kWarpSize / 2; offset > 0; offset /= 2) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], offset);
      if (lane == t) mine = acc[t];
    }
    acc[t] = 0.0f;
  }
  return mine;
}

// Work item `item`, part `part` (SwiGLU: 0 gate, 1 up): its weight row and the bounds
// of its matrix.
struct RowSource {
  const uint8_t* row;
  const uint8_t* lo;
  const uint8_t* hi;
};

template <bool kSwiGlu>
__device__ __forceinline__ RowSource row_source(const Args& a, int64_t item, int part) {
  VecTarget t;
  int64_t row;
  if constexpr (kSwiGlu) {
    t = part == 0 ? a.targets.t0 : a.targets.t1;
    row = item;
  } else {
    locate(a.targets, item, t, row);
  }
  return {t.w + row * t.row_stride, t.w, t.end};
}

// kTokens: the most tokens the instance takes (1, or kVecMaxTokens): a single token
// needs a fraction of the registers, so more warps fit on a multiprocessor.
template <DType T, bool kSwiGlu, int kTokens>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize) matmul_vec_kernel(Args a) {
  using Tile = Tiling<T>;
  constexpr int kParts = kSwiGlu ? 2 : 1;
  __shared__ __align__(16) uint8_t shared[kWarpsPerBlock][Tile::kSharedBytes];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t n_warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  int64_t item = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + warp;
  if (item >= a.targets.n_items) return;  // whole warps leave together: the shuffles see full warps
  uint8_t* tile_bytes = shared[warp];

  allow_next_kernel();
  int part = 0, tile = 0;
  TileLoad<Tile::kSegmentsPerLane> next;
  {
    const RowSource src = row_source<kSwiGlu>(a, item, 0);
    load_tile(vec_tile_span(Tile::kGeometry, reinterpret_cast<uintptr_t>(src.row), a.row_bytes, 0), src.lo, src.hi,
              lane, next);
  }
  // Weights are read-only: their first tile is on its way before x (which the kernel
  // before this one writes) may be read.
  wait_for_previous_kernel();
  float acc[kParts][kTokens];
#pragma unroll
  for (int p = 0; p < kParts; ++p) {
#pragma unroll
    for (int t = 0; t < kTokens; ++t) acc[p][t] = 0.0f;
  }

  for (;;) {
    __syncwarp();  // every lane is done reading the previous tile
    store_tile(next, tile_bytes, lane);
    const int offset = next.offset;
    __syncwarp();

    // The next (item, part, tile) of this warp, its loads issued now.
    int64_t next_item = item;
    int next_part = part, next_tile = tile + 1;
    if (next_tile == a.n_tiles) {
      next_tile = 0;
      if (++next_part == kParts) {
        next_part = 0;
        next_item += n_warps;
      }
    }
    const bool more = next_item < a.targets.n_items;
    if (more) {
      const RowSource src = row_source<kSwiGlu>(a, next_item, next_part);
      load_tile(vec_tile_span(Tile::kGeometry, reinterpret_cast<uintptr_t>(src.row), a.row_bytes, next_tile), src.lo,
                src.hi, lane, next);
    }

    if (kParts == 1 || part == 0) {
      multiply_tile<T, kTokens>(a, tile_bytes + offset, tile, lane, acc[0]);
    } else {
      multiply_tile<T, kTokens>(a, tile_bytes + offset, tile, lane, acc[kParts - 1]);
    }
    if (tile == a.n_tiles - 1 && part == kParts - 1) {  // the item's last tile: write it
      if constexpr (kSwiGlu) {
        const float gate = warp_sums(acc[0], a.n_tokens, lane);
        const float up = warp_sums(acc[kParts - 1], a.n_tokens, lane);
        if (lane < a.n_tokens) a.targets.t0.y[lane * a.y_stride + item] = silu_times(gate, up);
      } else {
        const float sum = warp_sums(acc[0], a.n_tokens, lane);
        VecTarget t;
        int64_t row;
        locate(a.targets, item, t, row);
        if (lane < a.n_tokens) t.y[lane * a.y_stride + row] = sum;
      }
    }
    if (!more) break;
    item = next_item;
    part = next_part;
    tile = next_tile;
  }
}

}  // namespace
}  // namespace pagoda::backend::cuda::weights::staged_kernel
