#pragma once
// What the strip kernels of the formats with a scale per group of 16 values (Q6_K, Q3_K,
// Q2_K) share across instruction sets (matmul_strips_groups16_avx2.cpp and
// _avx512vnni.cpp): each format's scale side. Include from those files only (internal
// linkage); each adds the values of a chunk in its own vector width.
//
// A format's Groups: its Block; its 16 group scales as signed bytes (scales); and either
// the offset its values are stored with, as a power of two (kOffsetShift; kMins false),
// or (kMins) its groups' minimums as 16 bytes (mins) with a block dmin.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

// Q3_K's 16 group scales (6 bits, stored with 32 added) as signed bytes:
// quant::dot_scales::unpack_q3_K in registers (its scalar form goes through memory, and
// the reload stalls). Of the 12 bytes as words w0, w1, w2: the low 4 bits of scales 0..3,
// 4..7, 8..11, 12..15 are the nibbles of w0, w1, w0 >> 4, w1 >> 4, their top 2 bits
// those of w2, w2 >> 2, w2 >> 4, w2 >> 6.
inline __m128i q3_K_scales(const quant::BlockQ3_K& b) {
  int32_t top;
  std::memcpy(&top, b.scales + 8, sizeof(top));
  const __m128i words = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.scales));  // w0, w1
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_unpacklo_epi64(words, words), _mm_setr_epi32(0, 0, 4, 4)),
                                    _mm_set1_epi8(0x0f));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(top), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi32(high, 4)), _mm_set1_epi8(32));
}

struct Q6_KScales {
  using Block = quant::BlockQ6_K;
  static constexpr bool kMins = false;
  static constexpr int kOffsetShift = 5;  // q + 32: 0..63
  static __m128i scales(const Block& b) { return load128(b.scales); }
};
struct Q3_KScales {
  using Block = quant::BlockQ3_K;
  static constexpr bool kMins = false;
  static constexpr int kOffsetShift = 2;  // q + 4: 0..7
  static __m128i scales(const Block& b) { return q3_K_scales(b); }
};
// Q2_K: values 0..3, a 4-bit scale (low nibble) and minimum (high nibble) per group.
struct Q2_KScales {
  using Block = quant::BlockQ2_K;
  static constexpr bool kMins = true;
  static constexpr int kOffsetShift = 0;
  static __m128i scales(const Block& b) { return _mm_and_si128(load128(b.scales), _mm_set1_epi8(0x0f)); }
  static __m128i mins(const Block& b) { return _mm_and_si128(_mm_srli_epi16(load128(b.scales), 4), _mm_set1_epi8(0x0f)); }
};

}  // namespace
}  // namespace pagoda::backend::cpu::avx2
