// The greedy token of each row of logits on the GPU (Backend::argmax_rows), so that a
// step of greedy requests copies one int per row to the host instead of its logits. One
// block per row: each thread keeps the largest value it sees in its stride and that
// value's first index (a NaN never ranks: `v > best` is false for it), then the block
// combines them, the larger value winning and the lower index on a tie. That is the first
// index of the row's largest value, as core/argmax.h finds it on the host.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/ops.h"

namespace pagoda::backend::cuda {
namespace {

constexpr int kThreads = 512;

struct Best {
  float value;
  int64_t index;
};

__device__ __forceinline__ Best better(Best a, Best b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

__global__ void __launch_bounds__(kThreads) argmax_rows_kernel(F32Rows x, int64_t n, int32_t* ids) {
  __shared__ Best warp_best[kThreads / 32];
  const float* row = x.row(blockIdx.x);
  // -inf with no index yet: any value but NaN or -inf replaces it; an all -inf row keeps
  // index n, which the caller's rule turns into -1 as it does for index 0 at -inf.
  Best best{-INFINITY, n};
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float v = row[i];
    if (v > best.value) best = Best{v, i};
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const Best other{__shfl_xor_sync(0xffffffffu, best.value, offset),
                     __shfl_xor_sync(0xffffffffu, best.index, offset)};
    best = better(best, other);
  }
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kThreads / 32; ++w) best = better(best, warp_best[w]);
  // A NaN first (the host's argmax stops there) or nothing above -inf: no token.
  const bool none = isnan(row[0]) || !(best.value > -INFINITY);
  ids[blockIdx.x] = none ? -1 : static_cast<int32_t>(best.index);
}

}  // namespace

Status argmax_rows(const Context& ctx, const TensorView& x, const TensorView& ids) {
  const int64_t rows = x.n_rows();
  if (!is_f32_rows(x) || x.ne[0] <= 0 || rows > INT32_MAX || ids.data == nullptr || ids.type != DType::I32 ||
      ids.ne[0] != rows || ids.n_rows() != 1) {
    return invalid_argument("argmax_rows: needs f32 rows and one I32 id per row");
  }
  if (rows == 0) return {};
  argmax_rows_kernel<<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream>>>(rows_of(x), x.ne[0], static_cast<int32_t*>(ids.data));
  return launch_status("argmax_rows");
}

}  // namespace pagoda::backend::cuda
