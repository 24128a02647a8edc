#include "sampling/row_sampling.h"

#include <cmath>
#include <string>

#include "core/argmax.h"
#include "sampling/draw.h"

namespace pagoda {

Status check_row_samplings(std::span<const RowSampling> rows, std::span<const LogitAdjustment> adjustments,
                           int64_t n_vocab) {
  for (const RowSampling& row : rows) {
    if (!(row.temperature >= 0.0f) || !(row.uniform >= 0.0 && row.uniform < 1.0) ||
        !(row.top_p >= 0.0f && row.top_p <= 1.0f) || !(row.log_min_p <= 0.0f) ||
        !(row.repetition_penalty > 0.0f) || row.repetition_penalty == INFINITY || row.top_logprobs < 0 ||
        row.top_logprobs > kMaxDeviceTopLogprobs || row.top_logprobs > n_vocab) {
      return invalid_argument(
          "sample_rows: a row needs temperature >= 0, a uniform in [0, 1), top_p in [0, 1], log(min_p) <= 0, "
          "a positive repetition penalty and top_logprobs in [0, " + std::to_string(kMaxDeviceTopLogprobs) + "]");
    }
    if (row.first_adjustment < 0 || row.n_adjustments < 0 ||
        static_cast<size_t>(row.first_adjustment) + static_cast<size_t>(row.n_adjustments) > adjustments.size()) {
      return invalid_argument("sample_rows: a row's adjustments lie outside the list of " +
                              std::to_string(adjustments.size()));
    }
  }
  for (const LogitAdjustment& a : adjustments) {
    if (a.token < 0 || a.token >= n_vocab || std::isnan(a.bias) || a.bias == INFINITY || !std::isfinite(a.subtract)) {
      return invalid_argument("sample_rows: an adjustment of token " + std::to_string(a.token) +
                              " is out of range (vocabulary " + std::to_string(n_vocab) + ")");
    }
  }
  return {};
}

namespace {

bool has_nan_or_inf(std::span<const float> logits) {
  for (const float x : logits) {
    if (std::isnan(x) || x == INFINITY) return true;
  }
  return false;
}

int32_t choose_token(std::span<const float> logits, const RowSampling& row,
                     std::span<const LogitAdjustment> adjustments, std::span<Candidate> candidates,
                     std::span<float> weights, int64_t capacity) {
  const size_t n = logits.size();
  const bool truncating = truncates(row, static_cast<int64_t>(n));
  if (adjustments.empty() && !truncating) {
    return row.temperature == 0.0f ? greedy_token(logits) : draw_token(logits, row.temperature, row.uniform, weights);
  }
  for (size_t i = 0; i < n; ++i) candidates[i] = Candidate{static_cast<int32_t>(i), logits[i]};
  for (const LogitAdjustment& a : adjustments) {
    float& logit = candidates[static_cast<size_t>(a.token)].logit;
    logit = adjusted_logit(logit, a, row.repetition_penalty);
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(candidates[i].logit) || candidates[i].logit == INFINITY) return kLeftToHost;
  }
  CandidateList list{candidates.first(n), false};
  const Candidate best = list.items[best_index(list)];
  if (!(best.logit > -INFINITY)) return -1;
  if (row.temperature == 0.0f) return best.token;

  const bool top_k = row.top_k > 0 && static_cast<size_t>(row.top_k) < n, top_p = row.top_p < 1.0f,
             min_p = row.log_min_p > -INFINITY;
  if (top_k && row.top_k > capacity) return kLeftToHost;
  apply_top_k(list, row.top_k);
  apply_top_p(list, row.top_p, weights);
  const auto over_capacity = [&] { return static_cast<int64_t>(list.items.size()) > capacity; };
  if (!top_k && top_p && over_capacity()) return kLeftToHost;
  apply_log_min_p(list, row.log_min_p);
  if (!top_k && !top_p && min_p && over_capacity()) return kLeftToHost;
  return list.items[sample_index(list, row.temperature, row.uniform, weights)].token;
}

}  // namespace

int32_t sample_row(std::span<const float> logits, const RowSampling& row,
                   std::span<const LogitAdjustment> adjustments, std::span<Candidate> candidates,
                   std::span<float> weights, int64_t capacity, RowLogprobs* logprobs) {
  if (row.logprobs && has_nan_or_inf(logits)) return kLeftToHost;
  const int32_t token = choose_token(logits, row, adjustments, candidates, weights, capacity);
  if (token < 0 || !row.logprobs || logprobs == nullptr) return token;
  const LogSoftmax log_softmax(logits, weights);
  logprobs->chosen = log_softmax(token);
  logprobs->n_top = row.top_logprobs;
  log_softmax.top(std::span<TokenLogprob>(logprobs->top, static_cast<size_t>(row.top_logprobs)));
  return token;
}

}  // namespace pagoda
