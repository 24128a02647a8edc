#pragma once
// The AVX-512 dot kernels of Q4_0, Q8_0 and IQ4_NL (32-value blocks, Q8_0
// activations), shared word for word by dot_avx512.cpp and dot_avx512vnni.cpp: only
// simd512::dot_u8_i8 differs between the two builds. The loop is the AVX2 one with
// twice the width: a 512-bit vector holds two blocks; two vectors (four blocks) per
// iteration into two accumulators; one horizontal sum at the end. An odd last block is
// paired with an all-zero block, which adds exactly 0.

#include "quant/dot_simd_avx512.h"  // first: it includes <immintrin.h> (see there)

#include <cstdint>

#include "quant/blocks.h"
#include "quant/dot_simd_avx2.h"

namespace pagoda::quant::simd512 {

static inline __m512i activation_pair(const BlockQ8_0& y0, const BlockQ8_0& y1) {
  return join(simd::load256(y0.qs), simd::load256(y1.qs));
}

// 16 int32 partial sums of the integer dot products of two blocks (lanes 0..7: first).
static inline __m512i pair_dot(const BlockQ4_0& x0, const BlockQ4_0& x1, __m512i y) {
  // Values are q - 8: dot(q, y) - dot(8, y), both with unsigned weights.
  return dot_u8_i8_minus(nibble_pairs_to_bytes(x0.qs, x1.qs), _mm512_set1_epi8(8), y);
}

static inline __m512i pair_dot(const BlockQ8_0& x0, const BlockQ8_0& x1, __m512i y) {
  return dot_i8(join(simd::load256(x0.qs), simd::load256(x1.qs)), y);
}

static inline __m512i pair_dot(const BlockIQ4_NL& x0, const BlockIQ4_NL& x1, __m512i y) {
  const __m512i index = nibble_pairs_to_bytes(x0.qs, x1.qs);
  return dot_signed(iq4_magnitudes(index), iq4_negative(index), y);
}

template <typename Block>
static inline __m512 pair_term(const Block& x0, const Block& x1, const BlockQ8_0& y0,
                               const BlockQ8_0& y1, __m512 acc) {
  const __m512 scales = pair_scales(simd::half_to_float(x0.d) * simd::half_to_float(y0.d),
                                    simd::half_to_float(x1.d) * simd::half_to_float(y1.d));
  const __m512i sums = pair_dot(x0, x1, activation_pair(y0, y1));
  return _mm512_fmadd_ps(scales, _mm512_cvtepi32_ps(sums), acc);
}

// sum_b d_x(b) * d_y(b) * dot(b) over the n / 32 blocks.
template <typename Block>
static float dot_scaled_blocks(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const int64_t nb = n / kQK;
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    acc0 = pair_term(x[b], x[b + 1], y[b], y[b + 1], acc0);
    acc1 = pair_term(x[b + 2], x[b + 3], y[b + 2], y[b + 3], acc1);
  }
  if (b + 2 <= nb) {
    acc0 = pair_term(x[b], x[b + 1], y[b], y[b + 1], acc0);
    b += 2;
  }
  if (b < nb) {
    static constexpr Block kZeroBlock{};
    static constexpr BlockQ8_0 kZeroActivations{};
    acc1 = pair_term(x[b], kZeroBlock, y[b], kZeroActivations, acc1);
  }
  return hsum(_mm512_add_ps(acc0, acc1));
}

}  // namespace pagoda::quant::simd512
