#include "sampling/draw.h"

#include <cmath>

#include "core/argmax.h"
#include "core/exp_sum.h"

namespace pagoda {

size_t draw_index(std::span<const float> weights, double total, double uniform) {
  const double target = uniform * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) {
    cumulative += static_cast<double>(weights[i]);
    if (target < cumulative) return i;
  }
  for (size_t i = weights.size(); i-- > 0;) {
    if (weights[i] > 0.0f) return i;
  }
  return 0;
}

int32_t draw_token(std::span<const float> logits, float temperature, double uniform, std::span<float> scratch) {
  const float max = logits[argmax_logit(logits)];
  if (!(max > -INFINITY)) return -1;
  const auto n = static_cast<int64_t>(logits.size());
  const double total = exp_sum(logits.data(), n, max, 1.0f / temperature, scratch.data());
  return static_cast<int32_t>(draw_index(scratch.first(logits.size()), total, uniform));
}

}  // namespace pagoda
