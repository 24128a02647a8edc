#pragma once
// Temperature draws over a row of logits, shared by the sampler (engine/) and the
// backends' sample_rows op on the host (row_sampling.h), so that a token drawn either way
// is the same; the CUDA backend's op (row_draw.cuh) reproduces them.

#include <cstddef>
#include <cstdint>
#include <span>

namespace pagoda {

// The first index whose running sum of weights (in double, in index order) exceeds
// uniform * total, total being their sum; weights: unnormalized probabilities (>= 0),
// uniform in [0, 1). Rounding that leaves the target unreached gives the last index of
// nonzero weight (0 where there is none).
size_t draw_index(std::span<const float> weights, double total, double uniform);

// The token a draw from softmax(logits / temperature) takes with `uniform` (no
// truncation, bias or penalty): the weights and their sum as core/exp_sum.h computes them
// from the largest logit (argmax_logit's), walked by draw_index; -1 where no logit is
// above -inf (or a NaN comes first). temperature > 0; scratch: [logits.size()], for the
// weights.
int32_t draw_token(std::span<const float> logits, float temperature, double uniform, std::span<float> scratch);

}  // namespace pagoda
