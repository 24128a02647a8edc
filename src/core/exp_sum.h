#pragma once
// The unnormalized softmax of a vector: w[i] = softmax_exp((x[i] - shift) * scale), and
// the sum of the w[i] in double. What the sampler draws temperature samples from: the C
// library's exp over a large vocabulary had been a third of a many-sequence decoding step
// when every sequence samples.
//
// The same bits on every CPU: the sum is kept as 8 partial sums (value i goes to sum
// i % 8) added in a fixed order at the end, and the AVX2 form performs the scalar form's
// operations lane by lane.

#include <cstdint>

namespace pagoda {

// x, w: [n] (w may be x: each value is read before its weight is written). shift: at
// least every x (the maximum), so that each exponent is <= 0; scale > 0 (1 /
// temperature). Returns the sum of w.
double exp_sum(const float* x, int64_t n, float shift, float scale, float* w);

namespace avx2 {
double exp_sum(const float* x, int64_t n, float shift, float scale, float* w);
}  // namespace avx2

namespace scalar {
// The partial sums (value i goes to sum i % kPartialSums) and the fixed order they
// combine in, shared with the AVX2 form.
inline constexpr int kPartialSums = 8;
double combine_partial_sums(const double (&sums)[kPartialSums]);
double exp_sum(const float* x, int64_t n, float shift, float scale, float* w);
}  // namespace scalar

}  // namespace pagoda
