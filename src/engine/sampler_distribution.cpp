// The sampler's distribution as numbers, for speculative decoding's rejection rule: the
// same stages as Sampler::sample (mask, bias, penalties, top-k, top-p, min-p,
// temperature), ending in probabilities instead of a draw.
#include <algorithm>
#include <cmath>
#include <string>

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
  float max = -INFINITY;
  for (const Candidate& c : list.items) max = std::max(max, c.logit);
  double total = 0.0;
  const double inverse_temperature = 1.0 / static_cast<double>(params_.temperature);
  for (const Candidate& c : list.items) {
    total += std::exp((static_cast<double>(c.logit) - max) * inverse_temperature);
  }
  for (const Candidate& c : list.items) {
    probs[static_cast<size_t>(c.token)] =
        static_cast<float>(std::exp((static_cast<double>(c.logit) - max) * inverse_temperature) / total);
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
