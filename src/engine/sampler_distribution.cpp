// The sampler's distribution as numbers, for speculative decoding's rejection rule: the
// same stages as Sampler::sample (mask, bias, penalties, top-k, top-p, min-p,
// temperature), ending in probabilities instead of a draw.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/exp_sum.h"
#include "engine/sampler.h"

namespace pagoda::engine {

Status Sampler::distribution(std::span<const float> raw_logits, std::span<const uint32_t> allowed,
                             std::span<float> probs) {
  PAGODA_TRY(check_inputs(raw_logits, allowed));
  if (probs.size() != candidates_.size()) {
    return invalid_argument("sampler: a distribution of " + std::to_string(probs.size()) +
                            " tokens for a vocabulary of " + std::to_string(n_vocab_));
  }
  const std::span<const float> logits = allowed.empty() ? raw_logits : apply_mask(raw_logits, allowed);
  CandidateList list = prepare_candidates(logits);
  const size_t best = best_index(list);
  if (!(list.items[best].logit > -INFINITY)) return no_finite_logit();
  std::fill(probs.begin(), probs.end(), 0.0f);
  if (params_.greedy()) {
    probs[static_cast<size_t>(list.items[best].token)] = 1.0f;
    return {};
  }
  apply_top_k(list, params_.top_k);
  apply_top_p(list, params_.top_p, weights_);
  apply_min_p(list, params_.min_p);
  // The weights sample_index draws from (exp_sum's, over the list in its order), each
  // over their sum: vectorized, where the C library's exp in double over a vocabulary
  // had cost about a millisecond a row, twice for every proposal a draft model makes.
  float max = -INFINITY;
  for (const Candidate& c : list.items) max = std::max(max, c.logit);
  const size_t n = list.items.size();
  for (size_t i = 0; i < n; ++i) weights_[i] = list.items[i].logit;
  const double total =
      exp_sum(weights_.data(), static_cast<int64_t>(n), max, 1.0f / params_.temperature, weights_.data());
  for (size_t i = 0; i < n; ++i) {
    probs[static_cast<size_t>(list.items[i].token)] = static_cast<float>(static_cast<double>(weights_[i]) / total);
  }
  return {};
}

SampledToken Sampler::score(std::span<const float> raw_logits, int32_t token) {
  SampledToken result;
  result.token = token;
  add_logprobs(raw_logits, result);
  return result;
}

}  // namespace pagoda::engine
