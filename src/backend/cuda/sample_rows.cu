// Backend::sample_rows on the GPU: the launches of sample_rows_kernel.cuh's kernel, one
// block a row, with the workspace the rows' adjusted logits take.

#include <algorithm>
#include <cstdint>

#include "backend/cuda/ops.h"
#include "backend/cuda/sample_rows_kernel.cuh"

namespace pagoda::backend::cuda {

using row_sampling_kernel::kThreads;
using row_sampling_kernel::SampleRowsArgs;
using row_sampling_kernel::sample_rows_kernel;

Status sample_rows(const Context& ctx, const TensorView& x, const RowSampling* rows,
                   const LogitAdjustment* adjustments, bool any_adjustment, const TensorView& ids,
                   RowLogprobs* logprobs) {
  const int64_t n_rows = x.n_rows();
  if (!is_f32_rows(x) || x.ne[0] <= 0 || n_rows > INT32_MAX || ids.data == nullptr || ids.type != DType::I32 ||
      ids.ne[0] != n_rows || ids.n_rows() != 1 || (n_rows > 0 && rows == nullptr)) {
    return invalid_argument("sample_rows: needs f32 rows, one sampling and one I32 id per row");
  }
  if (n_rows == 0) return {};
  SampleRowsArgs a{rows_of(x), x.ne[0], rows, adjustments, nullptr, 0, static_cast<int32_t*>(ids.data), logprobs};
  int64_t piece = n_rows;
  ScratchScope scope(*ctx.workspace);
  if (any_adjustment) {  // adjusted rows, as many at a time as the workspace holds
    const size_t row_bytes = static_cast<size_t>(a.n) * sizeof(float);
    const size_t room = ctx.workspace->remaining() > 256 ? ctx.workspace->remaining() - 256 : 0;
    piece = std::min<int64_t>(n_rows, static_cast<int64_t>(room / row_bytes));
    if (piece == 0) return resource_exhausted("sample_rows: the workspace holds no adjusted row");
    a.adjusted = static_cast<float*>(ctx.workspace->take(static_cast<size_t>(piece) * row_bytes));
  }
  for (int64_t first = 0; first < n_rows; first += piece) {
    a.row_begin = first;
    const auto blocks = static_cast<unsigned>(std::min(piece, n_rows - first));
    sample_rows_kernel<<<blocks, kThreads, 0, ctx.stream>>>(a);
    PAGODA_TRY(launch_status("sample_rows"));
  }
  return {};
}

}  // namespace pagoda::backend::cuda
