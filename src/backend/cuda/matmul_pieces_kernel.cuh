#pragma once
// The piece kernel of matmul_vec.cu (which launches it; see there for what it computes
// and how the work is split), in a header of its own so that a host emulation of CUDA
// threads (tests/backend/cuda/simt_emulation.h) can run the same source where no GPU is.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/matmul_vec_targets.cuh"
#include "backend/cuda/quant_pieces_k.cuh"

namespace pagoda::backend::cuda::weights::pieces_kernel {
// Internal linkage: the kernels' host stubs (nvcc) and their emulation (tests) must not
// share names in one binary.
namespace {

constexpr int kWarpSize = 32;
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kRows = 4;  // weight rows per block: each activation load serves kRows rows

struct Args {
  VecTargets targets;
  int64_t n_pieces = 0;    // pieces of 8 values per row
  const float* x = nullptr;  // [n_tokens][n_in], rows x_stride floats apart, 16-byte aligned
  int64_t x_stride = 0;
  int64_t y_stride = 0;    // every target's y (and SwiGLU's out)
  int n_tokens = 0;        // 1..kVecMaxTokens
};

// Row r (0..kRows) of block `group`: its weight row, where its sum goes, and (SwiGLU)
// its item. SwiGLU blocks take kRows / 2 items, gate and up rows alternating.
template <bool kSwiGlu>
__device__ __forceinline__ bool row_of(const Args& a, int64_t group, int r, const uint8_t*& row, float*& y,
                                       int64_t& index) {
  constexpr int kItems = kSwiGlu ? kRows / 2 : kRows;
  const int64_t item = group * kItems + (kSwiGlu ? r / 2 : r);
  if (item >= a.targets.n_items) return false;
  VecTarget t;
  if constexpr (kSwiGlu) {
    t = r % 2 == 0 ? a.targets.t0 : a.targets.t1;
    index = item;
  } else {
    locate(a.targets, item, t, index);
  }
  row = t.w + index * t.row_stride;
  y = t.y;
  return true;
}

// The 8 activations of piece p for token t.
__device__ __forceinline__ void piece_x(const Args& a, int t, int64_t p, float (&x)[kPieceValues]) {
  const float4* xp = reinterpret_cast<const float4*>(a.x + t * a.x_stride) + 2 * p;
  const float4 x0 = xp[0], x1 = xp[1];
  x[0] = x0.x, x[1] = x0.y, x[2] = x0.z, x[3] = x0.w, x[4] = x1.x, x[5] = x1.y, x[6] = x1.z, x[7] = x1.w;
}

__device__ __forceinline__ float dot_piece(const float (&v)[kPieceValues], const float (&x)[kPieceValues], float acc) {
#pragma unroll
  for (int j = 0; j < kPieceValues; ++j) acc = fmaf(v[j], x[j], acc);
  return acc;
}

// acc[r][t] += piece p of row r . piece p of x[t]; then the rows' next pieces (at `next`,
// where next < n_pieces) are loaded into raw. One token: each row decoded, reloaded and
// multiplied in turn (few registers live). More: every row decoded first, then each
// token's activations read once for all rows. Either way each acc[r][t] is one FMA chain
// in value order.
template <DType T, int kTokens>
__device__ __forceinline__ void multiply_piece(const Args& a, int64_t p, int64_t next, const uint8_t* const (&row)[kRows],
                                               const bool (&live)[kRows], typename WeightPiece<T>::Raw (&raw)[kRows],
                                               float (&acc)[kRows][kTokens]) {
  using Piece = WeightPiece<T>;
  const bool more = next < a.n_pieces;
  if constexpr (kTokens == 1) {
    float x[kPieceValues];
    piece_x(a, 0, p, x);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (!live[r]) continue;
      float v[kPieceValues];
      Piece::decode(raw[r], v);
      if (more) Piece::load(row[r], next, raw[r]);
      acc[r][0] = dot_piece(v, x, acc[r][0]);
    }
  } else {
    float v[kRows][kPieceValues];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (live[r]) {
        Piece::decode(raw[r], v[r]);
        if (more) Piece::load(row[r], next, raw[r]);
      }
    }
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t >= a.n_tokens) break;
      float x[kPieceValues];
      piece_x(a, t, p, x);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (live[r]) acc[r][t] = dot_piece(v[r], x, acc[r][t]);
      }
    }
  }
}

// Pieces of each row a thread keeps in flight: two, but one for Q6_K, whose pieces take
// enough registers that a second would cost more warps than it brings bytes.
template <DType T>
inline constexpr int kPiecesInFlight = T == DType::Q6_K ? 1 : 2;

// kTokens: the most tokens the instance takes (1, or kVecMaxTokens): one token needs
// fewer registers, so more blocks fit on a multiprocessor.
template <DType T, bool kSwiGlu, int kTokens>
__global__ void __launch_bounds__(kThreads) matmul_pieces_kernel(Args a) {
  using Piece = WeightPiece<T>;
  __shared__ float partial[kWarps][kRows][kTokens];
  const int64_t group = blockIdx.x;
  const uint8_t* row[kRows];
  bool live[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float* y = nullptr;
    int64_t index = 0;
    live[r] = row_of<kSwiGlu>(a, group, r, row[r], y, index);
  }

  allow_next_kernel();
  // kDepth pieces of each row in flight per thread: p + k kThreads in raw[k].
  constexpr int kDepth = kPiecesInFlight<T>;
  int64_t p = threadIdx.x;
  typename Piece::Raw raw[kDepth][kRows];
#pragma unroll
  for (int k = 0; k < kDepth; ++k) {
    if (p + k * kThreads >= a.n_pieces) break;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (live[r]) Piece::load(row[r], p + k * kThreads, raw[k][r]);
    }
  }
  // Weights are read-only: the first pieces are on their way before x (which the kernel
  // before this one writes) may be read.
  wait_for_previous_kernel();

  float acc[kRows][kTokens];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int t = 0; t < kTokens; ++t) acc[r][t] = 0.0f;
  }
  // Pieces in order p, p + kThreads, p + 2 kThreads, ...: each multiplied, its raw slot
  // then loaded with the piece kDepth ahead.
#pragma unroll 1
  for (; p < a.n_pieces; p += kDepth * kThreads) {
#pragma unroll
    for (int k = 0; k < kDepth; ++k) {
      const int64_t piece = p + k * kThreads;
      if (piece >= a.n_pieces) break;
      multiply_piece<T, kTokens>(a, piece, piece + kDepth * kThreads, row, live, raw[k], acc);
    }
  }

  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t >= a.n_tokens) break;
#pragma unroll
      for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        acc[r][t] += __shfl_xor_sync(0xffffffffu, acc[r][t], offset);
      }
      if (lane == 0) partial[warp][r][t] = acc[r][t];
    }
  }
  __syncthreads();
  // Thread r * kTokens + t writes row r's output for token t.
  const int mine = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (mine != r * kTokens + t || t >= a.n_tokens || !live[r]) continue;
      const uint8_t* weight_row = nullptr;
      float* y = nullptr;
      int64_t index = 0;
      row_of<kSwiGlu>(a, group, r, weight_row, y, index);
      float sum = partial[0][r][t];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) sum += partial[w][r][t];
      if constexpr (kSwiGlu) {
        if (r % 2 == 1) continue;  // the gate row's thread writes the item
        float up = partial[0][r + 1][t];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) up += partial[w][r + 1][t];
        y[t * a.y_stride + index] = silu_times(sum, up);
      } else {
        y[t * a.y_stride + index] = sum;
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cuda::weights::pieces_kernel
