#pragma once
// The greedy choice over a row of logits, shared by the sampler (engine/sampler.cpp) and
// the backends' argmax_rows op on the host, so that a token chosen either way is the same.

#include <cstddef>
#include <cstdint>
#include <span>

namespace pagoda {

// The first index of the largest of `logits`, a NaN never ranking before another logit
// (and one at index 0 stays the best, for the caller to refuse). `logits` is not empty.
size_t argmax_logit(std::span<const float> logits);

// argmax_logit, or -1 where that logit is not above -inf (every logit -inf or NaN, or a
// NaN first): the token a greedy sampler takes, or none.
int32_t greedy_token(std::span<const float> logits);

}  // namespace pagoda
