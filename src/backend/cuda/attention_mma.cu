// Paged attention on tensor cores, for an f16 cache and head sizes that are multiples of
// 16 (the grid, splits and merge are attention.cu's; see there): what the kernel computes
// (attention_mma_kernel.cuh) and its launches.
//
// A block's rows for the matrix products are its (query row, head) pairs: pair m is query
// row first_row + m / heads_per_block, head m % heads_per_block of the block's chunk of
// the group, so that one K/V tile serves every head of the group and every row of a
// prompt's group of rows. Each warp takes 16 pairs. A split's positions are walked in
// tiles of 64 (one tile unless the split is a row's last and the grid had fewer splits
// than the row): the tile's K and V rows are copied from the cache into shared memory
// as they are (f16, cp.async), then per warp S = q K^T (mma m16n8k16, f32 accumulate),
// an online softmax over S (running max and sum per pair, expf), and O += P V.
//
// Precision: q (f32) enters as two f16 halves, hi = f16(q) and lo = f16(q - hi), and
// S = q_lo K + q_hi K, so the scores carry about 22 bits of q against the cache's exact
// f16 K; likewise P (f32 weights in [0, 1]) as P_lo V + P_hi V. The tensor cores'
// products of f16 values are exact and their sums keep about f32's precision: the
// outputs stay within the scalar kernel's tolerance of the f32 result. (A query beyond f16's range, |q| > 65504, is out of reach
// of this kernel: such a model selects PAGODA_CUDA_ATTENTION=scalar.)
//
// Batch invariance: a pair's products on the tensor cores use its own row of A only, its
// softmax is reduced over the four lanes that hold its row in a fixed order, and positions
// past its own end (other rows' positions, or past the tile) are scored -inf, which
// weighs exactly 0. So a pair's output has the same bits whichever pairs share its block,
// its warp or its tile. (A non-finite V at a position another row of the block reads
// would make 0 x inf a NaN; the model's own values are finite.)

#include <cuda_runtime.h>

#include <string>

#include "backend/cuda/attention_args.cuh"
#include "backend/cuda/attention_mma_kernel.cuh"
#include "backend/cuda/f32_rows.cuh"

namespace pagoda::backend::cuda {
namespace {

using mma_attention::attention_mma_kernel;
using mma_attention::kLargeHeadWarps;
using mma_attention::kMaxWarps;
using mma_attention::padded_head_dim;
using mma_attention::shared_bytes;

template <int D>
Status launch(const Context& ctx, const AttentionArgs& a, dim3 grid, int warps) {
  attention_mma_kernel<D><<<grid, warps * 32, shared_bytes(D, warps), ctx.stream>>>(a);
  return launch_status("attention (tensor cores)");
}

// The shared memory of instance D's largest block.
size_t most_shared_bytes(int padded_dim) {
  return shared_bytes(padded_dim, padded_dim > 128 ? kLargeHeadWarps : kMaxWarps);
}

// Opts the instance in to the shared memory of its largest block, where that is above
// the default 48 KiB and the device allows it (sm_80 up to 163 KiB, sm_90 227 KiB).
template <int D>
Status allow_shared_memory(const Context& ctx) {
  const size_t most = most_shared_bytes(D);
  if (most > ctx.shared_memory_optin) return {};  // attention_mma_fits keeps those heads off this kernel
  return opt_in_shared_memory(reinterpret_cast<const void*>(attention_mma_kernel<D>), most);
}

}  // namespace

bool attention_mma_takes_head_dim(int32_t head_dim) {
  return head_dim > 0 && head_dim <= kMaxHeadDim && head_dim % 16 == 0;
}

int32_t attention_mma_block_rows(int32_t head_dim) {
  return 16 * (padded_head_dim(head_dim) > 128 ? kLargeHeadWarps : kMaxWarps);
}

Status prepare_attention_mma(const Context& ctx) {
  PAGODA_TRY(allow_shared_memory<64>(ctx));
  PAGODA_TRY(allow_shared_memory<128>(ctx));
  return allow_shared_memory<256>(ctx);
}

bool attention_mma_fits(const Context& ctx, int32_t head_dim) {
  const size_t most = most_shared_bytes(padded_head_dim(head_dim));
  return most <= 48 * 1024 || most <= ctx.shared_memory_optin;
}

Status launch_attention_mma(const Context& ctx, const AttentionArgs& a, dim3 grid) {
  const int32_t pairs = a.rows_per_block * a.heads_per_block;
  const int warps = static_cast<int>((pairs + 15) / 16);
  if (warps < 1 || pairs > attention_mma_block_rows(a.head_dim)) {
    return internal_error("attention: a block's rows and heads exceed the tensor-core kernel's");
  }
  switch (padded_head_dim(a.head_dim)) {
    case 64: return launch<64>(ctx, a, grid, warps);
    case 128: return launch<128>(ctx, a, grid, warps);
    default: return launch<256>(ctx, a, grid, warps);
  }
}

}  // namespace pagoda::backend::cuda
