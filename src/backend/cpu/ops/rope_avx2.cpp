// The AVX2 RoPE rotation (see rope.h): per lane the same product, negation and fused
// multiply-add as the scalar loop, so the same bits.

#include <immintrin.h>

#include "backend/cpu/ops/rope.h"

namespace pagoda::backend::cpu::avx2 {

void rotate_pairs(float* v, const float* cos_sin, int32_t n_pairs, int32_t n_dims, bool neox) {
  if (neox) {  // pair i is (v[i], v[i + half]): 8 pairs per step from two runs of 8 values
    const int32_t half = n_dims / 2;
    for (int32_t i = 0; i < n_pairs; i += 8) {
      const __m256 lo = _mm256_loadu_ps(cos_sin + 2 * i), hi = _mm256_loadu_ps(cos_sin + 2 * i + 8);
      // Even lanes of lo, hi are the cosines, odd ones the sines; the shuffle leaves
      // them in the order 0 1 4 5 | 2 3 6 7, the permute puts them back in order.
      const __m256 c = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xd8));
      const __m256 s = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xdd)), 0xd8));
      const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + i + half);
      const __m256 minus_x1_s = _mm256_xor_ps(_mm256_mul_ps(x1, s), _mm256_set1_ps(-0.0f));
      _mm256_storeu_ps(v + i, _mm256_fmadd_ps(x0, c, minus_x1_s));
      _mm256_storeu_ps(v + i + half, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
    }
    return;
  }
  // Pairs (2i, 2i + 1): 4 per vector. With x = (x0, x1, ...) and cs = (cos, sin, ...):
  // out = fma(x0 x0, cos sin, x1 x1 * -sin cos), i.e. (fma(x0, cos, -(x1 sin)),
  // fma(x0, sin, x1 cos)) per pair; x1 * -sin is -(x1 sin) exactly.
  const __m256 negate_even = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
  for (int32_t i = 0; i < n_pairs; i += 4) {
    const __m256 x = _mm256_loadu_ps(v + 2 * i);
    const __m256 cs = _mm256_loadu_ps(cos_sin + 2 * i);
    const __m256 sc = _mm256_xor_ps(_mm256_permute_ps(cs, 0xb1), negate_even);  // -sin, cos, ...
    const __m256 second = _mm256_mul_ps(_mm256_movehdup_ps(x), sc);
    _mm256_storeu_ps(v + 2 * i, _mm256_fmadd_ps(_mm256_moveldup_ps(x), cs, second));
  }
}

}  // namespace pagoda::backend::cpu::avx2
