// AVX2 dot products of the k-quants and IQ4_XS with Q8_K activations. Per super-block
// of 256 values: unpack 32 weights at a time to unsigned bytes, maddubs with the
// activations (adjacent pairs to int16), madd with the sub-block scales (to int32),
// sum in integers over the whole super-block, then one fused multiply-add by
// d_w * d_y. Minimums and value offsets (Q6_K's 32, the mins of Q2_K/Q4_K/Q5_K) are
// applied once per super-block through Q8_K's precomputed group sums (bsums).
//
// int16 ranges: the largest maddubs pair sum is 2 * 63 * 127 (Q6_K), far from 32767.

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/dot_scales.h"
#include "quant/dot_simd_avx2.h"

namespace pagoda::quant::avx2 {
namespace {

using simd::half_to_float;
using simd::load128;
using simd::load256;

// Bit b of every byte of v, moved to bit 4 (0x10 or 0). 16-bit shifts are safe: after
// the mask no bit can have crossed from the neighbouring byte.
template <int b>
__m256i bit_to_16(__m256i v) {
  const __m256i moved = b <= 4 ? _mm256_slli_epi16(v, 4 - b) : _mm256_srli_epi16(v, b - 4);
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

// sum over the super-block of scale(s) * q * y, given the 64 values of chunk j as two
// vectors of bytes (values 64j..64j+31 and 64j+32..64j+63).
template <int j>
__m256i q45_chunk(__m256i scales, __m256i low, __m256i high, const int8_t* q8) {
  const __m256i p_low = _mm256_maddubs_epi16(low, load256(q8 + 64 * j));
  const __m256i p_high = _mm256_maddubs_epi16(high, load256(q8 + 64 * j + 32));
  return _mm256_add_epi32(
      _mm256_madd_epi16(simd::shuffle_i16(scales, simd::kBroadcastI16[2 * j]), p_low),
      _mm256_madd_epi16(simd::shuffle_i16(scales, simd::kBroadcastI16[2 * j + 1]), p_high));
}

template <int j>
__m256i q4_K_chunk(const BlockQ4_K& x, __m256i scales, const int8_t* q8) {
  const __m256i bits = load256(x.qs + 32 * j);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  const __m256i low = _mm256_and_si256(bits, mask);
  const __m256i high = _mm256_and_si256(_mm256_srli_epi16(bits, 4), mask);
  return q45_chunk<j>(scales, low, high, q8);
}

template <int j>
__m256i q5_K_chunk(const BlockQ5_K& x, __m256i scales, __m256i qh, const int8_t* q8) {
  const __m256i bits = load256(x.qs + 32 * j);
  const __m256i mask = _mm256_set1_epi8(0x0f);
  const __m256i low = _mm256_or_si256(_mm256_and_si256(bits, mask), bit_to_16<2 * j>(qh));
  const __m256i high = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), mask),
                                       bit_to_16<2 * j + 1>(qh));
  return q45_chunk<j>(scales, low, high, q8);
}

// 16 int16 scales as two vectors: groups 0..7 and groups 8..15, each in both lanes.
struct GroupScales {
  __m256i first_half, second_half;
};

GroupScales group_scales(__m128i scales_i8) {
  const __m256i wide = _mm256_cvtepi8_epi16(scales_i8);
  return {_mm256_permute2x128_si256(wide, wide, 0x00), _mm256_permute2x128_si256(wide, wide, 0x11)};
}

// sum of scale(g) * p over the 4 chunks (32 values each) of one 128-value half, whose
// maddubs products are p[0..3]; chunk r holds groups 2r and 2r + 1 of that half.
__m256i scale_half(__m256i scales, const __m256i p[4]) {
  __m256i sum = _mm256_madd_epi16(simd::shuffle_i16(scales, simd::kPairI16[0]), p[0]);
  sum = _mm256_add_epi32(sum, _mm256_madd_epi16(simd::shuffle_i16(scales, simd::kPairI16[1]), p[1]));
  sum = _mm256_add_epi32(sum, _mm256_madd_epi16(simd::shuffle_i16(scales, simd::kPairI16[2]), p[2]));
  return _mm256_add_epi32(sum, _mm256_madd_epi16(simd::shuffle_i16(scales, simd::kPairI16[3]), p[3]));
}

// Q3_K chunk r (values 32r..32r+31 of a 128-value half): low 2 bits at bits 2r of
// `bits`; the value is low - 4 where bit 4 * half + r of hmask is clear, so the dot is
// dot(low, y) - dot(4 or 0, y), both with unsigned weights.
template <int half, int r>
__m256i q3_K_chunk(__m256i bits, __m256i hmask, const int8_t* q8) {
  constexpr int bit = 4 * half + r;
  const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * r), _mm256_set1_epi8(3));
  // One bit per byte survives the andnot, so 16-bit shifts cannot mix bytes: bit -> 4.
  const __m256i clear = _mm256_andnot_si256(hmask, _mm256_set1_epi8(static_cast<char>(1 << bit)));
  const __m256i minus4 = bit >= 2 ? _mm256_srli_epi16(clear, bit - 2) : _mm256_slli_epi16(clear, 2 - bit);
  const __m256i q8r = load256(q8 + 32 * r);
  return _mm256_sub_epi16(_mm256_maddubs_epi16(low, q8r), _mm256_maddubs_epi16(minus4, q8r));
}

template <int half>
__m256i q3_K_half(const BlockQ3_K& x, __m256i hmask, __m256i scales, const int8_t* q8) {
  const __m256i bits = load256(x.qs + 32 * half);
  const __m256i p[4] = {q3_K_chunk<half, 0>(bits, hmask, q8), q3_K_chunk<half, 1>(bits, hmask, q8),
                        q3_K_chunk<half, 2>(bits, hmask, q8), q3_K_chunk<half, 3>(bits, hmask, q8)};
  return scale_half(scales, p);
}

}  // namespace

float dot_q2_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float dmin = -y[b].d * half_to_float(x[b].dmin);
    const __m128i packed = load128(x[b].scales);  // scale | min << 4, one per group
    const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f));
    const __m256i min_products = _mm256_madd_epi16(_mm256_cvtepi8_epi16(mins), load256(y[b].bsums));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(min_products), acc);

    const GroupScales scales = group_scales(_mm_and_si128(packed, _mm_set1_epi8(0x0f)));
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i bits = load256(x[b].qs + 32 * half);
      const int8_t* q8 = y[b].qs + 128 * half;
      const __m256i p[4] = {
          _mm256_maddubs_epi16(_mm256_and_si256(bits, m3), load256(q8)),
          _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bits, 2), m3), load256(q8 + 32)),
          _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m3), load256(q8 + 64)),
          _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(bits, 6), m3), load256(q8 + 96))};
      sumi = _mm256_add_epi32(sumi, scale_half(half == 0 ? scales.first_half : scales.second_half, p));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return simd::hsum(acc);
}

float dot_q3_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    uint32_t unpacked[4];
    dot_scales::unpack_q3_K(x[b].scales, unpacked);
    const GroupScales scales = group_scales(_mm_sub_epi8(simd::from_words(unpacked), _mm_set1_epi8(32)));
    const __m256i hmask = load256(x[b].hmask);
    const __m256i sumi = _mm256_add_epi32(q3_K_half<0>(x[b], hmask, scales.first_half, y[b].qs),
                                          q3_K_half<1>(x[b], hmask, scales.second_half, y[b].qs + 128));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
  }
  return simd::hsum(acc);
}

float dot_q4_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_mins = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float dmin = -y[b].d * half_to_float(x[b].dmin);
    const simd::Q45Scales s = simd::q45_scales(x[b].scales, y[b]);
    acc_mins = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(s.min_products), acc_mins);
    const int8_t* q8 = y[b].qs;
    const __m256i sum01 = _mm256_add_epi32(q4_K_chunk<0>(x[b], s.scales, q8), q4_K_chunk<1>(x[b], s.scales, q8));
    const __m256i sum23 = _mm256_add_epi32(q4_K_chunk<2>(x[b], s.scales, q8), q4_K_chunk<3>(x[b], s.scales, q8));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sum01, sum23)), acc);
  }
  return simd::hsum(acc) + simd::hsum(acc_mins);
}

float dot_q5_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m256 acc = _mm256_setzero_ps();
  __m128 acc_mins = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float dmin = -y[b].d * half_to_float(x[b].dmin);
    const simd::Q45Scales s = simd::q45_scales(x[b].scales, y[b]);
    acc_mins = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(s.min_products), acc_mins);
    const __m256i qh = load256(x[b].qh);
    const int8_t* q8 = y[b].qs;
    const __m256i sum01 = _mm256_add_epi32(q5_K_chunk<0>(x[b], s.scales, qh, q8),
                                           q5_K_chunk<1>(x[b], s.scales, qh, q8));
    const __m256i sum23 = _mm256_add_epi32(q5_K_chunk<2>(x[b], s.scales, qh, q8),
                                           q5_K_chunk<3>(x[b], s.scales, qh, q8));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sum01, sum23)), acc);
  }
  return simd::hsum(acc) + simd::hsum(acc_mins);
}

float dot_q6_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const __m128i scales_i8 = load128(x[b].scales);
    const GroupScales scales = group_scales(scales_i8);
    // The stored values are q + 32: take 32 * sum_g scale_g * bsums_g off at the end.
    const __m256i offset = _mm256_slli_epi32(
        _mm256_madd_epi16(_mm256_cvtepi8_epi16(scales_i8), load256(y[b].bsums)), 5);
    __m256i sumi = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half) {
      const __m256i ql0 = load256(x[b].ql + 64 * half);
      const __m256i ql1 = load256(x[b].ql + 64 * half + 32);
      const __m256i qh = load256(x[b].qh + 32 * half);
      const int8_t* q8 = y[b].qs + 128 * half;
      // Value 32r + l: low nibble from ql0 (r = 0, 2: low, high) or ql1 (r = 1, 3), top
      // two bits from bits 2r..2r+1 of qh, placed at bits 4..5.
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(12)), 2));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                         _mm256_and_si256(qh, _mm256_set1_epi8(48)));
      const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                         _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(-64)), 2));
      const __m256i p[4] = {_mm256_maddubs_epi16(q0, load256(q8)), _mm256_maddubs_epi16(q1, load256(q8 + 32)),
                            _mm256_maddubs_epi16(q2, load256(q8 + 64)), _mm256_maddubs_epi16(q3, load256(q8 + 96))};
      sumi = _mm256_add_epi32(sumi, scale_half(half == 0 ? scales.first_half : scales.second_half, p));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi, offset)), acc);
  }
  return simd::hsum(acc);
}

float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i codebook = simd::both_lanes(load128(kIQ4NLValues));
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m256i sum0 = _mm256_setzero_si256();
    __m256i sum1 = _mm256_setzero_si256();
    for (int s = 0; s < kQK_K / 32; s += 2) {
      const __m256i q0 = _mm256_shuffle_epi8(codebook, simd::nibbles_to_bytes(x[b].qs + 16 * s));
      const __m256i q1 = _mm256_shuffle_epi8(codebook, simd::nibbles_to_bytes(x[b].qs + 16 * s + 16));
      const __m256i p0 = simd::mul_i8_pairs(q0, load256(y[b].qs + 32 * s));
      const __m256i p1 = simd::mul_i8_pairs(q1, load256(y[b].qs + 32 * s + 32));
      const int scale0 = dot_scales::iq4_xs_scale(x[b].scales_l, x[b].scales_h, s) - 32;
      const int scale1 = dot_scales::iq4_xs_scale(x[b].scales_l, x[b].scales_h, s + 1) - 32;
      sum0 = _mm256_add_epi32(sum0, _mm256_madd_epi16(p0, _mm256_set1_epi16(static_cast<int16_t>(scale0))));
      sum1 = _mm256_add_epi32(sum1, _mm256_madd_epi16(p1, _mm256_set1_epi16(static_cast<int16_t>(scale1))));
    }
    const float d = half_to_float(x[b].d) * y[b].d;
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sum0, sum1)), acc);
  }
  return simd::hsum(acc);
}

}  // namespace pagoda::quant::avx2
