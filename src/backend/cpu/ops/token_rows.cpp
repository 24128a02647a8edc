// Tokens chosen where the logits are: argmax_rows (the greedy token of each row) and
// sample_rows (each row's sampling, sampling/row_sampling.h), on the host.

#include <cstdint>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"
#include "backend/logprobs_view.h"
#include "core/argmax.h"
#include "sampling/row_sampling.h"

namespace pagoda::backend::cpu {
namespace {

bool ids_fit(const TensorView& x, const TensorView& ids) {
  return is_f32_rows(x) && x.ne[0] > 0 && ids.data != nullptr && ids.type == DType::I32 && ids.ne[0] == x.n_rows() &&
         ids.n_rows() == 1;
}

}  // namespace

Status argmax_rows(ThreadPool& pool, const TensorView& x, const TensorView& ids) {
  if (!ids_fit(x, ids)) return invalid_argument("argmax_rows: needs f32 rows and one I32 id per row");
  const auto n = static_cast<size_t>(x.ne[0]);
  int32_t* out = static_cast<int32_t*>(ids.data);
  parallel_rows(pool, x.n_rows(), x.ne[0], [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) out[r] = greedy_token(std::span<const float>(row_at<const float>(x, r), n));
  });
  return {};
}

Status sample_rows(ThreadPool& pool, const TensorView& x, std::span<const RowSampling> rows,
                   std::span<const LogitAdjustment> adjustments, const TensorView& ids, const TensorView& logprobs) {
  if (!ids_fit(x, ids) || static_cast<int64_t>(rows.size()) != x.n_rows()) {
    return invalid_argument("sample_rows: needs f32 rows, one sampling and one I32 id per row");
  }
  PAGODA_TRY(check_row_samplings(rows, adjustments, x.ne[0]));
  PAGODA_TRY(check_logprobs_view(rows, logprobs));
  auto* reports = static_cast<RowLogprobs*>(logprobs.data);
  const auto n = static_cast<size_t>(x.ne[0]);
  int32_t* out = static_cast<int32_t*>(ids.data);
  // One row a task: a draw reads its whole row at least twice (the weights, then their
  // walk). No list is too long here: the host's sampler would do the same work.
  pool.parallel_for(x.n_rows(), [&](int64_t r, int) {
    const RowSampling& row = rows[static_cast<size_t>(r)];
    thread_local std::vector<Candidate> candidates;
    thread_local std::vector<float> weights;
    candidates.resize(n);
    weights.resize(n);
    out[r] = sample_row(std::span<const float>(row_at<const float>(x, r), n), row,
                        adjustments.subspan(static_cast<size_t>(row.first_adjustment),
                                            static_cast<size_t>(row.n_adjustments)),
                        candidates, weights, /*capacity=*/INT64_MAX, row.logprobs ? reports + r : nullptr);
  });
  return {};
}

}  // namespace pagoda::backend::cpu
