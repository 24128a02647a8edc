// AVX-512 dot products of Q4_K, Q5_K, Q6_K and IQ4_XS with Q8_K activations: the
// AVX2 kernels (dot_k_avx2.cpp) at twice the width, 64 values per vector: unpack to
// unsigned bytes, maddubs with the activations, madd with the group scales, integer
// sums over the super-block, one fused multiply-add by d_w * d_y per super-block.
// No VNNI variant: vpdpbusd would yield int32 that still need a per-group multiply,
// which costs more than the vpmaddwd it replaces.

#include "quant/dot_simd_avx512.h"  // first: it includes <immintrin.h> (see there)

#include <cstdint>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/dot_scales.h"
#include "quant/dot_simd_avx2.h"

namespace pagoda::quant::avx512 {
namespace {

using simd::half_to_float;
using simd::load128;
using simd::load256;
using simd512::join;
using simd512::load512;

// pshufb controls on 8 int16 scales repeated in every 128-bit lane: chunk j (64 values)
// takes scale 2j in its first 32 bytes and scale 2j + 1 in its last 32.
struct alignas(64) Control512 {
  int8_t bytes[64];
};
constexpr Control512 chunk_scale_control(int j) {
  Control512 c{};
  for (int k = 0; k < 64; ++k) c.bytes[k] = static_cast<int8_t>(2 * (2 * j + k / 32) + k % 2);
  return c;
}
constexpr Control512 kChunkScale[4] = {chunk_scale_control(0), chunk_scale_control(1),
                                       chunk_scale_control(2), chunk_scale_control(3)};

// vpermw indices on Q6_K's 16 int16 group scales: vector `part` (0 or 1) of half h
// covers groups 8h + 4 * part + lane, one group per 128-bit lane.
struct alignas(64) Index512 {
  int16_t words[32];
};
constexpr Index512 group_scale_index(int h, int part) {
  Index512 index{};
  for (int k = 0; k < 32; ++k) index.words[k] = static_cast<int16_t>(8 * h + 4 * part + k / 8);
  return index;
}
constexpr Index512 kGroupScale[2][2] = {{group_scale_index(0, 0), group_scale_index(0, 1)},
                                        {group_scale_index(1, 0), group_scale_index(1, 1)}};

__m512i load_control(const void* table) { return _mm512_load_si512(table); }

// Q4_K / Q5_K: scale(j) * q * y for the 64 values of chunk j, as 16 int32.
__m512i q45_chunk(__m512i scales, int j, __m512i q, const int8_t* q8) {
  const __m512i scale = _mm512_shuffle_epi8(scales, load_control(kChunkScale[j].bytes));
  return _mm512_madd_epi16(scale, _mm512_maddubs_epi16(q, load512(q8 + 64 * j)));
}

// The 64 nibbles of 32 bytes in value order: low nibbles, then high nibbles.
__m512i nibbles_64(const uint8_t* qs) {
  const __m256i bits = load256(qs);
  return _mm512_and_si512(join(bits, _mm256_srli_epi16(bits, 4)), _mm512_set1_epi8(0x0f));
}

// The super-block's integer sum of scale * q * y for Q4_K, or with the fifth bits in
// qh for Q5_K.
template <bool kFifthBit>
__m512i q45_super_block(const uint8_t* qs, const uint8_t* qh, __m256i scales256, const int8_t* q8) {
  const __m512i scales = _mm512_broadcast_i32x4(_mm256_castsi256_si128(scales256));
  const __m512i high_bits = kFifthBit ? _mm512_broadcast_i64x4(load256(qh)) : _mm512_setzero_si512();
  __m512i sum = _mm512_setzero_si512();
  for (int j = 0; j < 4; ++j) {
    __m512i q = nibbles_64(qs + 32 * j);
    if constexpr (kFifthBit) {  // fifth bits: bit 2j of qh[l] for the first 32 values, bit 2j + 1 after
      const __m512i bit = join(_mm256_set1_epi8(static_cast<char>(1 << (2 * j))),
                               _mm256_set1_epi8(static_cast<char>(1 << (2 * j + 1))));
      q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(high_bits, bit), q, _mm512_set1_epi8(16));
    }
    sum = _mm512_add_epi32(sum, q45_chunk(scales, j, q, q8));
  }
  return sum;
}

template <typename Block, bool kFifthBit>
float dot_q45_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m512 acc = _mm512_setzero_ps();
  __m128 acc_mins = _mm_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float dmin = -y[b].d * half_to_float(x[b].dmin);
    const simd::Q45Scales s = simd::q45_scales(x[b].scales, y[b]);
    acc_mins = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(s.min_products), acc_mins);
    const uint8_t* qh = nullptr;
    if constexpr (kFifthBit) qh = x[b].qh;
    const __m512i sumi = q45_super_block<kFifthBit>(x[b].qs, qh, s.scales, y[b].qs);
    acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
  }
  return simd512::hsum(acc) + simd::hsum(acc_mins);
}

}  // namespace

float dot_q4_K(int64_t n, const void* w, const void* a) { return dot_q45_K<BlockQ4_K, false>(n, w, a); }
float dot_q5_K(int64_t n, const void* w, const void* a) { return dot_q45_K<BlockQ5_K, true>(n, w, a); }

float dot_q6_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i m_top = _mm512_set1_epi8(0x30);
  // 16-bit shift counts that bring qh bits 0-1 / 2-3 (first vector) and 4-5 / 6-7
  // (second vector) to bits 4-5: one count per 256-bit half.
  const __m512i shift_first = join(_mm256_set1_epi16(4), _mm256_set1_epi16(2));
  const __m512i shift_second = join(_mm256_set1_epi16(0), _mm256_set1_epi16(2));
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const __m128i scales_i8 = load128(x[b].scales);
    const __m512i scales = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(scales_i8));
    // The stored values are q + 32: take 32 * sum_g scale_g * bsums_g off at the end.
    const __m256i offset = _mm256_slli_epi32(
        _mm256_madd_epi16(_mm256_cvtepi8_epi16(scales_i8), load256(y[b].bsums)), 5);
    __m512i sumi = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_sub_epi32(_mm256_setzero_si256(), offset), 0);
    for (int h = 0; h < 2; ++h) {
      // ql[64h .. 64h + 63] holds the low nibbles of values 128h + 0..63 (low halves of
      // its bytes) and 128h + 64..127 (high halves); qh[32h + l] their top bits.
      const __m512i low_bits = load512(x[b].ql + 64 * h);
      const __m512i top_bits = _mm512_broadcast_i64x4(load256(x[b].qh + 32 * h));
      const __m512i q_first = _mm512_or_si512(_mm512_and_si512(low_bits, m4),
                                              _mm512_and_si512(_mm512_sllv_epi16(top_bits, shift_first), m_top));
      const __m512i q_second = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low_bits, 4), m4),
                                               _mm512_and_si512(_mm512_srlv_epi16(top_bits, shift_second), m_top));
      const int8_t* q8 = y[b].qs + 128 * h;
      const __m512i p_first = _mm512_maddubs_epi16(q_first, load512(q8));
      const __m512i p_second = _mm512_maddubs_epi16(q_second, load512(q8 + 64));
      const __m512i s_first = _mm512_permutexvar_epi16(load_control(kGroupScale[h][0].words), scales);
      const __m512i s_second = _mm512_permutexvar_epi16(load_control(kGroupScale[h][1].words), scales);
      sumi = _mm512_add_epi32(sumi, _mm512_add_epi32(_mm512_madd_epi16(s_first, p_first),
                                                     _mm512_madd_epi16(s_second, p_second)));
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
  }
  return simd512::hsum(acc);
}

float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    __m512i sumi = _mm512_setzero_si512();
    for (int s = 0; s < kQK_K / 32; s += 2) {  // two 32-value sub-blocks per vector
      const __m512i index = simd512::nibble_pairs_to_bytes(x[b].qs + 16 * s, x[b].qs + 16 * s + 16);
      const __m512i q8 = load512(y[b].qs + 32 * s);
      const __m512i signed_q8 =
          _mm512_mask_sub_epi8(q8, simd512::iq4_negative(index), _mm512_setzero_si512(), q8);
      const __m512i p = _mm512_maddubs_epi16(simd512::iq4_magnitudes(index), signed_q8);
      const int scale0 = dot_scales::iq4_xs_scale(x[b].scales_l, x[b].scales_h, s) - 32;
      const int scale1 = dot_scales::iq4_xs_scale(x[b].scales_l, x[b].scales_h, s + 1) - 32;
      const __m512i scale = join(_mm256_set1_epi16(static_cast<int16_t>(scale0)),
                                 _mm256_set1_epi16(static_cast<int16_t>(scale1)));
      sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, scale));
    }
    const float d = half_to_float(x[b].d) * y[b].d;
    acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
  }
  return simd512::hsum(acc);
}

}  // namespace pagoda::quant::avx512
