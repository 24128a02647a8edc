#include "core/exp_sum.h"

#include "core/cpu_features.h"
#include "core/softmax_exp.h"

namespace pagoda {

namespace scalar {

double combine_partial_sums(const double (&sums)[kPartialSums]) {
  return ((sums[0] + sums[4]) + (sums[2] + sums[6])) + ((sums[1] + sums[5]) + (sums[3] + sums[7]));
}

double exp_sum(const float* x, int64_t n, float shift, float scale, float* w) {
  double sums[kPartialSums] = {};
  for (int64_t i = 0; i < n; ++i) {
    w[i] = softmax_exp((x[i] - shift) * scale);
    sums[i % kPartialSums] += static_cast<double>(w[i]);
  }
  return combine_partial_sums(sums);
}

}  // namespace scalar

double exp_sum(const float* x, int64_t n, float shift, float scale, float* w) {
  static const bool avx2 = cpu_features().has_avx2_group();
  return avx2 ? avx2::exp_sum(x, n, shift, scale, w) : scalar::exp_sum(x, n, shift, scale, w);
}

}  // namespace pagoda
