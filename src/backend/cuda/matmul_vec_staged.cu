// The staged few-token kernel: y = x W^T for a few tokens (n <= kVecMaxTokens), every
// weight byte read once per call with 16-byte loads. matmul_vec.cu's kernel takes the
// formats it has piece decoders for; this one takes the others, and rows it cannot align.
// Reading the blocks in place (18, 34, 144, 210 bytes, at any even address) takes 16-bit
// loads, many instructions and cache wavefronts per byte. Instead each warp
// copies a tile of its row (32 or 64 chunks of 32 values, whole blocks) into shared
// memory with aligned 16-byte loads, coalesced across the warp, and dequantizes from
// there with the formats' own chunk decoders (quant_blocks.cuh: the host's bits). The
// next tile's loads are issued before the current one is multiplied, so each warp keeps
// a tile in flight; warps walk the rows grid-stride, so the loads of one row's last tile
// overlap the next row's first.
//
// Lane l multiplies chunks l (and l + 32) of each tile with the n tokens' activations in
// f32; the lanes' sums are added across the warp with shuffles at the end of the row.
// On sm_90 the kernel may start before the one that writes x has finished (a
// programmatic dependent launch): it issues its first weight loads, then waits.
// Several weights of one type and row length (a layer's q, k and v) share one launch,
// their rows numbered one after another; in the SwiGLU form (one token) a warp streams
// gate row j and up row j and writes silu(gate) * up.

#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "backend/cuda/matmul_staged_kernel.cuh"

namespace pagoda::backend::cuda::weights {
namespace {

using staged_kernel::Args;
using staged_kernel::kWarpSize;
using staged_kernel::kWarpsPerBlock;
using staged_kernel::matmul_vec_kernel;
using staged_kernel::Tiling;

// Blocks the grid asks for per multiprocessor; the warps then walk the rows grid-stride.
constexpr int kBlocksPerSm = 8;

// The fields every launch shares, from x and the first weight; y_stride from `y`.
Args common_args(const TensorView& x, const TensorView& w, const TensorView& y) {
  Args a;
  a.row_bytes = static_cast<int64_t>(w.row_bytes());
  a.n_in = w.ne[0];
  a.n_chunks = (a.n_in + kChunkValues - 1) / kChunkValues;
  a.x = static_cast<const float*>(x.data);
  a.x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
  a.y_stride = static_cast<int64_t>(y.nb[1] / sizeof(float));
  a.n_tokens = static_cast<int>(x.n_rows());
  a.x_aligned = aligned_to(x.data, 16) && (a.n_tokens == 1 || x.nb[1] % 16 == 0);
  return a;
}

// The kernel instance for format T and the call's token count.
template <DType T, bool kSwiGlu>
Status launch_format(const Context& ctx, dim3 grid, const Args& a) {
  const dim3 block(kWarpsPerBlock * kWarpSize);
  if constexpr (kSwiGlu) {  // one token only (matmul_vec_swiglu)
    return launch_early_start(ctx, grid, block, matmul_vec_kernel<T, true, 1>, a, "matmul (SwiGLU vector kernel)");
  } else {
    return a.n_tokens == 1
               ? launch_early_start(ctx, grid, block, matmul_vec_kernel<T, false, 1>, a, "matmul (vector kernel)")
               : launch_early_start(ctx, grid, block, matmul_vec_kernel<T, false, kVecMaxTokens>, a,
                                    "matmul (vector kernel)");
  }
}

template <bool kSwiGlu>
Status launch(const Context& ctx, DType type, Args a) {
  if (a.targets.n_items == 0 || a.n_tokens == 0) return {};
  if (a.n_chunks == 0) return internal_error("matmul (vector kernel): weight rows without values");
  const int64_t wanted_blocks = (a.targets.n_items + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t resident = static_cast<int64_t>(std::max(ctx.sm_count, 1)) * kBlocksPerSm;
  const dim3 grid(static_cast<unsigned>(std::min(wanted_blocks, resident)));
  Status (*launcher)(const Context&, dim3, const Args&) = nullptr;
  visit_weight_format(type, [&](auto format) {
    constexpr DType T = decltype(format)::value;
    a.n_tiles = static_cast<int>((a.n_chunks + Tiling<T>::kChunks - 1) / Tiling<T>::kChunks);
    launcher = &launch_format<T, kSwiGlu>;
  });
  if (launcher == nullptr) return unsupported("matmul: no kernel for weight type " + std::string(dtype_name(type)));
  return launcher(ctx, grid, a);
}

}  // namespace

Status matmul_vec_staged(const Context& ctx, const TensorView& x, const TensorView& w0, const TensorView& y0,
                         const VecTargets& targets, bool swiglu) {
  Args a = common_args(x, w0, y0);
  a.targets = targets;
  return swiglu ? launch<true>(ctx, w0.type, a) : launch<false>(ctx, w0.type, a);
}

}  // namespace pagoda::backend::cuda::weights
