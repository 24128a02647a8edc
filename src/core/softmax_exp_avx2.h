#pragma once
// softmax_exp (core/softmax_exp.h) on 8 lanes; include from *_avx2.cpp files only (its
// copy has internal linkage and AVX2 + FMA encodings).

#include <immintrin.h>

#include <initializer_list>

#include "core/softmax_exp.h"

namespace pagoda {
namespace {

// softmax_exp of 8 values, lane by lane the scalar function's operations.
inline __m256 softmax_exp8(__m256 x) {
  namespace k = softmax_exp_constants;
  const __m256 min = _mm256_set1_ps(k::kMin), round = _mm256_set1_ps(k::kRound);
  const __m256 clamped = _mm256_max_ps(min, x);
  const __m256 t = _mm256_fmadd_ps(clamped, _mm256_set1_ps(k::kLog2e), round);
  const __m256 n = _mm256_sub_ps(t, round);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-k::kLn2Hi), clamped);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-k::kLn2Lo), r);
  __m256 p = _mm256_set1_ps(k::kC7);
  for (const float c : {k::kC6, k::kC5, k::kC4, k::kC3, k::kC2, 1.0f, 1.0f})
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
  const __m256i exponent = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(round)),
                       _mm256_set1_epi32(127)),
      23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, min, _CMP_LT_OQ), y);
}

}  // namespace
}  // namespace pagoda
