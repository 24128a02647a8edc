#pragma once
// Q4_K and Q5_K super-blocks of 16 rows taken apart for the 16-row strip kernels that
// multiply them (matmul_strips_k_avx512vnni.cpp, matmul_strips_k_amx.cpp): values,
// scales, minimums, d and dmin, row r's in 32-bit lane r. Include from those files only.

#include <immintrin.h>

#include <cstddef>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

// Sub-block s (0..7) of 32 values of two rows, row `low`'s in the low 256 bits: the low
// (s even) or high (s odd) nibbles of qs[32 * (s / 2)...]; Q5_K adds bit s of qh[l] as
// the fifth bit of value l.
inline __m512i sub_block_nibbles(const uint8_t* low, const uint8_t* high, int s) {
  const __m512i q = load_row_pair(low + 32 * (s / 2), high + 32 * (s / 2));
  return _mm512_and_si512(s % 2 ? _mm512_srli_epi16(q, 4) : q, _mm512_set1_epi8(0x0f));
}
struct Q4_KValues {
  using Block = quant::BlockQ4_K;
  static __m512i values(const Block& low, const Block& high, int s) { return sub_block_nibbles(low.qs, high.qs, s); }
};
struct Q5_KValues {
  using Block = quant::BlockQ5_K;
  static __m512i values(const Block& low, const Block& high, int s) {
    // Bit s of each qh byte moved to bit 4 by one 16-bit shift; the bits the shift brings
    // in from the neighbouring byte fall outside the mask.
    const __m512i qh = load_row_pair(low.qh, high.qh);
    const __m512i moved = s <= 4 ? _mm512_slli_epi16(qh, 4 - s) : _mm512_srli_epi16(qh, s - 4);
    // nibbles | (moved & 0x10)
    return _mm512_ternarylogic_epi32(sub_block_nibbles(low.qs, high.qs, s), moved, _mm512_set1_epi8(0x10), 0xf8);
  }
};

// Sub-block `sub` of super-block b of the 16 rows w: out[k] holds values 4k..4k+3 of
// each row, row r's 4 bytes in lane r.
template <class Values>
inline void sub_block_chunks(const typename Values::Block* const* w, int64_t b, int sub, __m512i out[8]) {
  __m512i pairs[8];
  for (int i = 0; i < 8; ++i) pairs[i] = Values::values(w[paired_row(i)][b], w[paired_row(i) + 4][b], sub);
  transpose_rows16(pairs, out);
}

// The 6-bit scales and minimums of super-block b of the 16 rows w: scales[j] and
// mins[j] hold sub-block j's, row r's in lane r (int32).
template <class Block>
inline void scale_min_lanes(const Block* const* w, int64_t b, __m512i scales[8], __m512i mins[8]) {
  __m512i s[8], m[8];  // [row pair]: 8 values of each row as int32
  for (int i = 0; i < 8; ++i) {
    const __m256i both = unpack_scales(w[paired_row(i)][b].scales, w[paired_row(i) + 4][b].scales);
    s[i] = _mm512_cvtepu8_epi32(_mm256_castsi256_si128(_mm256_permute4x64_epi64(both, 0x08)));  // qwords 0, 2
    m[i] = _mm512_cvtepu8_epi32(_mm256_castsi256_si128(_mm256_permute4x64_epi64(both, 0x0d)));  // 1, 3
  }
  transpose_rows16(s, scales);
  transpose_rows16(m, mins);
}

// d and dmin of super-block b of the 16 rows w, as f32.
template <class Block>
inline void store_d_dmin(const Block* const* w, int64_t b, float* d, float* dmin) {
  static_assert(offsetof(Block, dmin) == offsetof(Block, d) + sizeof(quant::half));
  for (int h = 0; h < 2; ++h) {
    __m256 d_half, dmin_half;
    avx2::strip_half_pairs(w + 8 * h, b, offsetof(Block, d), d_half, dmin_half);
    _mm256_store_ps(d + 8 * h, d_half);
    _mm256_store_ps(dmin + 8 * h, dmin_half);
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu::avx512vnni
