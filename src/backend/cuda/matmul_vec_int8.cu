// y = x W^T for a few tokens of quantized weights, multiplied as the CPU's scalar dot
// products multiply them (quant/dot_scalar.cpp, quant/dot_k_scalar.cpp): x quantized to
// the activation format the weights pair with (activations_q8.cu), each block's sums
// taken in integers (dp4a), the block's value in f32 with the CPU's operations, and a
// row's blocks added in order. So an output is the bits of quant's scalar dot product
// of the row with x's quantized row, whatever the other tokens or rows of the call
// (batch invariance). Formats: int8_formats.cuh (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL)
// and int8_formats_k.cuh (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS).
//
// One token's x is quantized by the kernel itself, each part's values where the part
// reads them (a launch fewer a product); several tokens' once, before the products.
//
// Work: a thread takes one part of a block (the whole 32-value block, or a 64-value
// quarter of a 256-value one) of kRows weight rows at once, so that each activation
// load serves kRows rows; the parts of a block sit in neighbouring lanes, which add their
// integer sums by shuffles. The block's value goes to shared memory, and one thread per
// (row, token) adds the row's blocks in order. A block of 32 to 128 threads, as many as
// a row has parts.

#include <cuda_runtime.h>

#include <string>

#include "backend/cuda/matmul_int8_kernel.cuh"

namespace pagoda::backend::cuda::weights {
namespace {

using int8_formats::visit_int8_format;
using int8_kernel::IntArgs;
using int8_kernel::kRows;
using int8_kernel::matmul_int8_kernel;

// Shared memory for the blocks' values, kRows x tokens x blocks floats: at most 48 KiB
// (the default limit), so rows of up to 384 blocks.
constexpr int64_t kMaxSharedBytes = 48 * 1024;

template <typename F, bool kSwiGlu>
Status launch_int8(const Context& ctx, const IntArgs& a) {
  const int8_kernel::LaunchShape shape = int8_kernel::launch_shape<F, kSwiGlu>(a);
  const dim3 grid(static_cast<unsigned>(shape.blocks)), block(static_cast<unsigned>(shape.threads));
  const size_t shared = shape.shared_bytes;
  constexpr const char* kWhat = "matmul (integer kernel)";
  if constexpr (kSwiGlu) {
    return launch_early_start(ctx, grid, block, matmul_int8_kernel<F, true, 1>, a, kWhat, shared);
  } else {
    return a.n_tokens == 1
               ? launch_early_start(ctx, grid, block, matmul_int8_kernel<F, false, 1>, a, kWhat, shared)
               : launch_early_start(ctx, grid, block, matmul_int8_kernel<F, false, kVecMaxTokens>, a, kWhat, shared);
  }
}

// The products: one token quantized where the kernel reads it; several first quantized
// into workspace scratch by activations_q8.cu (one launch for all the tokens, not one
// per block of rows).
template <typename F>
Status run_int8(const Context& ctx, const TensorView& x, const VecTargets& targets, int64_t y_stride, bool swiglu) {
  ScratchScope scope(*ctx.workspace);
  IntArgs a;
  if (x.n_rows() == 1) {
    a.x_f32 = static_cast<const float*>(x.data);
  } else {
    if (!take_quantized_rows(ctx, F::kActivations, x.ne[0], x.n_rows(), &a.x)) {
      return resource_exhausted("matmul: the workspace has no room for the quantized activations");
    }
    PAGODA_TRY(quantize_rows(ctx, F::kActivations, x, a.x));
  }
  a.targets = targets;
  a.n_blocks = static_cast<int>(x.ne[0] / F::kBlockValues);
  a.y_stride = y_stride;
  a.n_tokens = static_cast<int>(x.n_rows());
  return swiglu ? launch_int8<F, true>(ctx, a) : launch_int8<F, false>(ctx, a);
}

}  // namespace

bool matmul_vec_int8_takes(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  if (!ctx.quantized_in_integers || ctx.vec_kernel != VecKernel::kPieces || ctx.workspace == nullptr ||
      x.type != DType::F32) {
    return false;
  }
  const TensorView& w0 = targets[0].w;
  bool takes = false;
  visit_int8_format(w0.type, [&](auto format) {
    using F = decltype(format);
    const int64_t n_blocks = w0.ne[0] / F::kBlockValues;
    // Sized for the most tokens, so that whether it takes them never depends on the count.
    const int64_t shared = static_cast<int64_t>(sizeof(float)) * kRows * kVecMaxTokens * n_blocks;
    takes = w0.ne[0] % F::kBlockValues == 0 && shared <= kMaxSharedBytes;
    for (const MatmulTarget& t : targets) {
      takes = takes && aligned_to(t.w.data, F::kAlign) && t.w.nb[1] % F::kAlign == 0;
    }
  });
  return takes;
}

Status matmul_vec_int8(const Context& ctx, const TensorView& x, DType type, const VecTargets& targets,
                       int64_t y_stride, bool swiglu) {
  if (targets.n_items == 0 || x.n_rows() == 0) return {};
  using Runner = Status (*)(const Context&, const TensorView&, const VecTargets&, int64_t, bool);
  Runner runner = nullptr;
  visit_int8_format(type, [&](auto format) { runner = &run_int8<decltype(format)>; });
  if (runner == nullptr) return internal_error("matmul_vec_int8: no integer format for " + std::string(dtype_name(type)));
  return runner(ctx, x, targets, y_stride, swiglu);
}

}  // namespace pagoda::backend::cuda::weights
