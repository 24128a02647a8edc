// The greedy token of each row of logits on the GPU (Backend::argmax_rows), so that a
// step of greedy requests copies one int per row to the host instead of its logits. One
// block per row, with row_greedy.cuh's rule (core/argmax.h's).

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/row_greedy.cuh"

namespace pagoda::backend::cuda {
namespace {

constexpr int kThreads = 512;

__global__ void __launch_bounds__(kThreads) argmax_rows_kernel(F32Rows x, int64_t n, int32_t* ids) {
  __shared__ RowBest warp_best[kThreads / 32];
  const float* row = x.row(blockIdx.x);
  const RowBest best = row_best<kThreads>(row, n, warp_best);
  if (threadIdx.x == 0) ids[blockIdx.x] = greedy_of(row, best);
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
