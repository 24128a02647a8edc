#pragma once
// Building blocks of the AVX-512 dot kernels: the 512-bit versions of dot_simd_avx2.h.
// Include only from *_avx512.cpp / *_avx512vnni.cpp files. In the VNNI files
// (__AVX512VNNI__ defined) the byte dot product is one vpdpbusd; elsewhere it is
// vpmaddubsw + vpmaddwd, as in AVX2. Everything is `static`: see dot_kernels.h.

// GCC 12 warns about its own _mm512_undefined_* idiom, a self-initialised variable in
// avx512fintrin.h (GCC bug 105593). The warnings point into the header, so ignoring them
// around its first inclusion silences exactly those; this header must therefore be the
// first to include <immintrin.h> in an AVX-512 file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include <cstdint>

#include "quant/blocks.h"
#include "quant/dot_simd_avx2.h"

namespace pagoda::quant::simd512 {

static inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }

// Two 256-bit halves as one vector: `low` in bytes 0..31, `high` in bytes 32..63.
static inline __m512i join(__m256i low, __m256i high) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}
static inline __m512 join(__m256 low, __m256 high) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(low), high, 1);
}

// Sum of the 16 floats.
static inline float hsum(__m512 v) {
  const __m256 high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return simd::hsum(_mm256_add_ps(_mm512_castps512_ps256(v), high));
}

// The 32 nibbles of each of two blocks (16 bytes each, at `first` and `second`) as 64
// bytes in [0, 15], in value order: first's 32 values, then second's.
static inline __m512i nibble_pairs_to_bytes(const uint8_t* first, const uint8_t* second) {
  const __m256i packed = _mm256_set_m128i(simd::load128(second), simd::load128(first));
  // 128-bit lanes are [first, second, first >> 4, second >> 4]; reorder to
  // [first, first >> 4, second, second >> 4] (lane selectors 0, 2, 1, 3).
  const __m512i lanes = join(packed, _mm256_srli_epi16(packed, 4));
  const __m512i ordered = _mm512_shuffle_i64x2(lanes, lanes, 0xD8);
  return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0f));
}

// 16 int32 partial sums of u[i] * s[i] over 64 bytes, u unsigned, s signed. Without
// VNNI the int16 pair sums cannot saturate while u * |s| stays below 2^14.
static inline __m512i dot_u8_i8(__m512i u, __m512i s) {
#if defined(__AVX512VNNI__)
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, s);
#else
  return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1));
#endif
}

// dot(u, s) - dot(k, s) for unsigned u and k (how offset-binary weights subtract
// their offset without first going signed).
static inline __m512i dot_u8_i8_minus(__m512i u, __m512i k, __m512i s) {
#if defined(__AVX512VNNI__)
  return _mm512_sub_epi32(dot_u8_i8(u, s), dot_u8_i8(k, s));
#else
  const __m512i diff = _mm512_sub_epi16(_mm512_maddubs_epi16(u, s), _mm512_maddubs_epi16(k, s));
  return _mm512_madd_epi16(diff, _mm512_set1_epi16(1));
#endif
}

// dot(x, y) for signed x whose magnitudes are `magnitude` and whose negative bytes are
// flagged in `negative`: the sign moves onto y (|y| <= 127, so -y fits a byte).
static inline __m512i dot_signed(__m512i magnitude, __mmask64 negative, __m512i y) {
  const __m512i signed_y = _mm512_mask_sub_epi8(y, negative, _mm512_setzero_si512(), y);
  return dot_u8_i8(magnitude, signed_y);
}

static inline __m512i dot_i8(__m512i x, __m512i y) {
  return dot_signed(_mm512_abs_epi8(x), _mm512_movepi8_mask(x), y);
}

// Per-block scales of two 32-value blocks, laid out like their int32 partial sums:
// lanes 0..7 the first, 8..15 the second.
static inline __m512 pair_scales(float first, float second) {
  return join(_mm256_set1_ps(first), _mm256_set1_ps(second));
}

// |v| of the IQ4_NL codebook, for the sign trick: the codebook is negative exactly in
// its first half, so an index below 8 marks a negative weight.
struct alignas(16) Magnitudes {
  int8_t values[16];
};
static constexpr Magnitudes iq4_nl_magnitudes() {
  Magnitudes m{};
  for (int i = 0; i < 16; ++i)
    m.values[i] = static_cast<int8_t>(kIQ4NLValues[i] < 0 ? -kIQ4NLValues[i] : kIQ4NLValues[i]);
  return m;
}
static constexpr Magnitudes kIQ4NLMagnitudes = iq4_nl_magnitudes();
static constexpr bool iq4_nl_negative_first_half() {
  for (int i = 0; i < 16; ++i)
    if ((kIQ4NLValues[i] < 0) != (i < 8)) return false;
  return true;
}
static_assert(iq4_nl_negative_first_half());

// IQ4_NL / IQ4_XS weights of 64 indices as (|value|, negative-mask) for dot_signed.
static inline __m512i iq4_magnitudes(__m512i index) {
  return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(simd::load128(kIQ4NLMagnitudes.values)), index);
}
static inline __mmask64 iq4_negative(__m512i index) {
  return _mm512_cmplt_epu8_mask(index, _mm512_set1_epi8(8));
}

}  // namespace pagoda::quant::simd512
