#pragma once
// The check both backends make of Backend::sample_rows' log-probability output.

#include <algorithm>
#include <span>

#include "backend/tensor.h"
#include "core/status.h"
#include "sampling/row_sampling.h"

namespace pagoda::backend {

// ok when no row asks for log-probabilities, or `logprobs` is a contiguous I32 view of
// one RowLogprobs (kRowLogprobsWords words) per row.
inline Status check_logprobs_view(std::span<const RowSampling> rows, const TensorView& logprobs) {
  const bool asked = std::any_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.logprobs; });
  if (!asked) return {};
  if (logprobs.data == nullptr || logprobs.type != DType::I32 || logprobs.ne[0] != kRowLogprobsWords ||
      logprobs.n_rows() != static_cast<int64_t>(rows.size()) || !logprobs.is_contiguous()) {
    return invalid_argument("sample_rows: rows ask for log-probabilities: needs an I32 view of one RowLogprobs a row");
  }
  return {};
}

}  // namespace pagoda::backend
