// y = x W^T for a few tokens (n <= kVecMaxTokens): the decode step's matmuls, bound by
// how fast the weights stream from device memory. A block of kThreads threads takes
// kRows weight rows; thread i reads pieces i, i + kThreads, ... of each (8 consecutive
// values, quant_pieces.cuh and quant_pieces_k.cuh), so that a warp's weight loads and its activation loads each
// cover contiguous bytes, and multiplies them with the same 8 activations of each token,
// read once for the kRows rows. Each thread keeps two pieces of every row in flight (one
// for Q6_K): a piece's slot is loaded with the piece two ahead as soon as it is decoded. A thread's sums go across its warp by shuffles and across the
// block's warps through shared memory, in a fixed order: token t's outputs are the same
// bits whatever the other tokens of the call (so batch-invariant steps can run groups of
// kVecMaxTokens tokens through it).
//
// Several weights of one type and row length (a layer's q, k and v) share one launch,
// their rows numbered one after another. The SwiGLU form (one token) takes gate row j
// and up row j in one block and writes silu(gate) * up, the silu_mul op's bits. On sm_90
// a block issues its first weight loads before the kernel that writes x has finished
// (launch_order.cuh). Formats without piece decoders, and rows or activations not
// aligned for their loads, go through the staged kernel (matmul_vec_staged.cu); the
// formats the CPU multiplies in integers (all but F32, F16 and BF16) through the integer
// kernel (matmul_vec_int8.cu) where it takes them.

#include <cuda_fp16.h>

#include <string>

#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/matmul_vec_targets.cuh"
#include "backend/cuda/quant_pieces_k.cuh"

namespace pagoda::backend::cuda::weights {
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
constexpr int kPiecesInFlight = T == DType::Q6_K ? 1 : 2;

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
    float* y;
    int64_t index;
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
      const uint8_t* weight_row;
      float* y;
      int64_t index;
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

// Whether the piece kernel can read these weights (of a format it has decoders for) and
// this x: rows whose start and stride keep the loads aligned, whole pieces, and x aligned
// for its 16-byte loads.
template <DType T>
bool takes(const TensorView& x, std::span<const MatmulTarget> targets) {
  using Piece = WeightPiece<T>;
  // x's stride is checked for one token too, so that whether this kernel or the staged
  // one runs does not depend on the token count (batch-invariant steps).
  if (!aligned_to(x.data, 16) || x.nb[1] % 16 != 0) return false;
  for (const MatmulTarget& t : targets) {
    if (t.w.ne[0] % kPieceValues != 0 || !aligned_to(t.w.data, Piece::kAlign) || t.w.nb[1] % Piece::kAlign != 0) {
      return false;
    }
  }
  return true;
}

Args common_args(const TensorView& x, const TensorView& w, const TensorView& y) {
  Args a;
  a.n_pieces = w.ne[0] / kPieceValues;
  a.x = static_cast<const float*>(x.data);
  a.x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
  a.y_stride = static_cast<int64_t>(y.nb[1] / sizeof(float));
  a.n_tokens = static_cast<int>(x.n_rows());
  return a;
}

template <DType T, bool kSwiGlu>
Status launch(const Context& ctx, const Args& a) {
  if (a.targets.n_items == 0 || a.n_tokens == 0) return {};
  constexpr int64_t kItems = kSwiGlu ? kRows / 2 : kRows;
  const dim3 grid(static_cast<unsigned>((a.targets.n_items + kItems - 1) / kItems));
  if constexpr (kSwiGlu) {
    return launch_early_start(ctx, grid, dim3(kThreads), matmul_pieces_kernel<T, true, 1>, a,
                              "matmul (SwiGLU piece kernel)");
  } else {
    return a.n_tokens == 1
               ? launch_early_start(ctx, grid, dim3(kThreads), matmul_pieces_kernel<T, false, 1>, a,
                                    "matmul (piece kernel)")
               : launch_early_start(ctx, grid, dim3(kThreads), matmul_pieces_kernel<T, false, kVecMaxTokens>, a,
                                    "matmul (piece kernel)");
  }
}

using Launcher = Status (*)(const Context&, const Args&);

// The piece kernel's launcher for these weights (one type), or null where it does not
// take them (or PAGODA_CUDA_MATVEC picked another kernel).
template <bool kSwiGlu>
Launcher launcher_for(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  Launcher launcher = nullptr;
  if (ctx.vec_kernel != VecKernel::kPieces) return launcher;
  visit_weight_format(targets[0].w.type, [&](auto format) {
    constexpr DType T = decltype(format)::value;
    if constexpr (WeightPiece<T>::kSupported) {
      if (takes<T>(x, targets)) launcher = &launch<T, kSwiGlu>;
    }
  });
  return launcher;
}

}  // namespace

Status matmul_vec(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  if (targets.empty()) return {};
  if (targets.size() > kVecMaxTargets) {
    return internal_error("matmul_vec: " + std::to_string(targets.size()) + " weights in one launch, at most " +
                          std::to_string(kVecMaxTargets));
  }
  if (x.n_rows() > kVecMaxTokens) {
    return internal_error("matmul_vec: " + std::to_string(x.n_rows()) + " tokens, at most " +
                          std::to_string(kVecMaxTokens));
  }
  const TensorView& w0 = targets[0].w;
  for (const MatmulTarget& t : targets) {
    if (t.w.type != w0.type || t.w.ne[0] != w0.ne[0] || t.y.nb[1] != targets[0].y.nb[1]) {
      return internal_error("matmul_vec: the weights of one launch need one type, one row length and one y stride");
    }
  }
  const VecTargets gathered = vec_targets(targets);
  if (matmul_vec_int8_takes(ctx, x, targets)) {
    return matmul_vec_int8(ctx, x, w0.type, gathered, static_cast<int64_t>(targets[0].y.nb[1] / sizeof(float)),
                         /*swiglu=*/false);
  }
  const Launcher launcher = launcher_for<false>(ctx, x, targets);
  if (launcher == nullptr) return matmul_vec_staged(ctx, x, w0, targets[0].y, gathered, /*swiglu=*/false);
  Args a = common_args(x, w0, targets[0].y);
  a.targets = gathered;
  return launcher(ctx, a);
}

Status matmul_vec_swiglu(const Context& ctx, const TensorView& x, const TensorView& w_gate,
                         const TensorView& w_up, const TensorView& out) {
  if (x.n_rows() > 1) {
    return internal_error("matmul_vec_swiglu: " + std::to_string(x.n_rows()) + " tokens, one at most");
  }
  if (w_gate.type != w_up.type || w_gate.ne[0] != w_up.ne[0] || w_gate.ne[1] != w_up.ne[1]) {
    return internal_error("matmul_vec_swiglu: gate and up need one type and shape");
  }
  if (w_gate.ne[1] == 0) return {};
  const MatmulTarget pair[] = {{w_gate, out}, {w_up, out}};
  const VecTargets gathered = swiglu_targets(w_gate, w_up, out);
  if (matmul_vec_int8_takes(ctx, x, pair)) {
    return matmul_vec_int8(ctx, x, w_gate.type, gathered, static_cast<int64_t>(out.nb[1] / sizeof(float)),
                         /*swiglu=*/true);
  }
  const Launcher launcher = launcher_for<true>(ctx, x, pair);
  if (launcher == nullptr) return matmul_vec_staged(ctx, x, w_gate, out, gathered, /*swiglu=*/true);
  Args a = common_args(x, w_gate, out);
  a.targets = gathered;
  return launcher(ctx, a);
}

}  // namespace pagoda::backend::cuda::weights
