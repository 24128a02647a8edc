#include <immintrin.h>

#include "backend/cpu/ops/silu.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

// reference_expf on 8 lanes: the same fused and plain operations in the same order.
// Lanes whose 2^n scaling leaves the normal range (|n| > 126) are redone by the scalar
// function, which rounds into subnormals the way ldexp does.
__m256 reference_exp8(__m256 x, bool& out_of_range) {
  const __m256 shift = _mm256_set1_ps(0x1.8p23f);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), shift), shift);
  const __m256 neg_n = _mm256_sub_ps(_mm256_setzero_ps(), n);
  const __m256 b = _mm256_fmadd_ps(neg_n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                   _mm256_fmadd_ps(neg_n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 p_hi = _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f));
  const __m256 p_mid = _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f));
  const __m256 p_lo = _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f));
  const __m256 j = _mm256_fmadd_ps(_mm256_fmadd_ps(p_hi, u, p_mid), u, p_lo);
  // |n| <= 126: 2^n is a normal float and j * 2^n rounds once, as ldexp does.
  const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  const __m256 in_range = _mm256_cmp_ps(abs_n, _mm256_set1_ps(126.0f), _CMP_LE_OQ);  // false for NaN
  out_of_range = _mm256_movemask_ps(in_range) != 0xff;
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(j, _mm256_castsi256_ps(exponent));
}

}  // namespace

void silu_mul_reference_exp(const float* g, const float* u, float* z, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 gv = _mm256_loadu_ps(g + i);
    const __m256 uv = _mm256_loadu_ps(u + i);
    bool out_of_range = false;
    const __m256 e = reference_exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv), out_of_range);
    if (out_of_range) {  // rare: |g| > ~87
      for (int64_t k = i; k < i + 8; ++k) z[k] = g[k] / (1.0f + reference_expf(-g[k])) * u[k];
      continue;
    }
    _mm256_storeu_ps(z + i, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), uv));
  }
}

}  // namespace pagoda::backend::cpu::avx2
