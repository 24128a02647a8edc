#include <immintrin.h>

#include "core/exp_sum.h"
#include "core/softmax_exp_avx2.h"

namespace pagoda::avx2 {

double exp_sum(const float* x, int64_t n, float shift, float scale, float* w) {
  const __m256 shift8 = _mm256_set1_ps(shift), scale8 = _mm256_set1_ps(scale);
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();  // partial sums 0..3, 4..7
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = softmax_exp8(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), shift8), scale8));
    _mm256_storeu_ps(w + i, e);
    low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double sums[scalar::kPartialSums];
  _mm256_store_pd(sums, low);
  _mm256_store_pd(sums + 4, high);
  for (; i < n; ++i) {
    w[i] = softmax_exp((x[i] - shift) * scale);
    sums[i % scalar::kPartialSums] += static_cast<double>(w[i]);
  }
  return scalar::combine_partial_sums(sums);
}

}  // namespace pagoda::avx2
