#pragma once
// Building blocks of the AVX2 dot kernels (also used, unchanged, by the AVX-512 files
// for their 256-bit tails). Include only from files compiled with -mavx2 -mfma -mf16c.
// Everything is `static inline`: see dot_kernels.h for why no inline linkage.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/dot_scales.h"

namespace pagoda::quant::simd {

static inline float half_to_float(uint16_t h) { return kHalfToFloat.values[h]; }

// Sum of the 8 floats.
static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Sum of the 4 floats.
static inline float hsum(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 16 bytes of nibbles to 32 bytes in [0, 15]: low nibbles first, then high nibbles,
// which is the order of values in every 32-value block.
static inline __m256i nibbles_to_bytes(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// 32 bits to 32 bytes: 0xFF where the bit is set, 0x00 where clear.
static inline __m256i bits_to_bytes(const uint8_t* bits4) {
  uint32_t bits;
  std::memcpy(&bits, bits4, sizeof(bits));
  // Byte i takes byte i / 8 of `bits`, then keeps only bit i % 8 (ORing all others).
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
  return _mm256_cmpeq_epi8(_mm256_or_si256(spread, others), _mm256_set1_epi64x(-1));
}

// Signed x times signed y, adjacent pairs summed to int16. maddubs wants its first
// operand unsigned, so the sign of x moves onto y. Cannot saturate while |y| <= 127.
static inline __m256i mul_i8_pairs(__m256i x, __m256i y) {
  return _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

// Adjacent int16 pairs summed to int32.
static inline __m256i sum_i16_pairs(__m256i v) { return _mm256_madd_epi16(v, _mm256_set1_epi16(1)); }

// 8 int32 partial sums of x[i] * y[i] over 32 signed bytes.
static inline __m256i dot_i8(__m256i x, __m256i y) { return sum_i16_pairs(mul_i8_pairs(x, y)); }

// The same for unsigned x (values below 128).
static inline __m256i dot_u8_i8(__m256i x, __m256i y) {
  return sum_i16_pairs(_mm256_maddubs_epi16(x, y));
}

static inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
static inline __m128i load128(const void* p) {
  return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

// pshufb controls that broadcast one int16 of each 128-bit lane to the whole lane.
// kBroadcastI16[i]: int16 number i, in both lanes (8 scales duplicated in both lanes
// give scale i for 32 consecutive values).
// kPairI16[i]: int16 number 2i in the low lane, 2i + 1 in the high lane (one scale per
// 16-value group, two groups per 32 values).
struct alignas(32) ShuffleControl {
  int8_t bytes[32];
};
static constexpr ShuffleControl broadcast_i16_control(int low, int high) {
  ShuffleControl c{};
  for (int k = 0; k < 16; ++k) {
    c.bytes[k] = static_cast<int8_t>(2 * low + k % 2);
    c.bytes[16 + k] = static_cast<int8_t>(2 * high + k % 2);
  }
  return c;
}
static constexpr ShuffleControl kBroadcastI16[8] = {
    broadcast_i16_control(0, 0), broadcast_i16_control(1, 1), broadcast_i16_control(2, 2),
    broadcast_i16_control(3, 3), broadcast_i16_control(4, 4), broadcast_i16_control(5, 5),
    broadcast_i16_control(6, 6), broadcast_i16_control(7, 7)};
static constexpr ShuffleControl kPairI16[4] = {
    broadcast_i16_control(0, 1), broadcast_i16_control(2, 3), broadcast_i16_control(4, 5),
    broadcast_i16_control(6, 7)};

static inline __m256i shuffle_i16(__m256i v, const ShuffleControl& control) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(control.bytes)));
}

// The same 128 bits in both lanes.
static inline __m256i both_lanes(__m128i v) { return _mm256_set_m128i(v, v); }

// Four uint32 built in registers: loading them from memory right after scalar stores of
// 4 bytes each would stall on store forwarding (a 16-byte load cannot forward from them).
static inline __m128i from_words(const uint32_t w[4]) {
  return _mm_set_epi32(static_cast<int>(w[3]), static_cast<int>(w[2]), static_cast<int>(w[1]),
                       static_cast<int>(w[0]));
}

// Q4_K / Q5_K: the 8 scales as int16 in both lanes, and the minimums' share
// sum_s min_s * (sum of y over sub-block s) as 4 int32 partial sums.
struct Q45Scales {
  __m256i scales;
  __m128i min_products;
};

static inline Q45Scales q45_scales(const uint8_t* packed, const BlockQ8_K& y) {
  uint32_t unpacked[4];
  dot_scales::unpack_q4_K(packed, unpacked);
  const __m256i scales_and_mins = _mm256_cvtepu8_epi16(from_words(unpacked));
  const __m256i bsums = load256(y.bsums);
  const __m128i sub_block_sums =
      _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
  return {simd::both_lanes(_mm256_castsi256_si128(scales_and_mins)),
          _mm_madd_epi16(_mm256_extracti128_si256(scales_and_mins, 1), sub_block_sums)};
}

}  // namespace pagoda::quant::simd
