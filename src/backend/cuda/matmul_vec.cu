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

#include "backend/cuda/matmul_pieces_kernel.cuh"

namespace pagoda::backend::cuda::weights {
namespace {

using pieces_kernel::Args;
using pieces_kernel::kRows;
using pieces_kernel::kThreads;
using pieces_kernel::matmul_pieces_kernel;

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
