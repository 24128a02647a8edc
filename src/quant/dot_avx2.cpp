// AVX2 dot products of the 32-value block formats with Q8_0 / Q8_1 activations. Per
// block: unpack the 32 weights to bytes, multiply with the activation bytes and sum
// pairs (maddubs), then pairs of pairs (madd) into 8 int32 lanes, convert, and fuse-add
// times the block's scale into a float accumulator. Two blocks per iteration with two
// accumulators hide the FMA latency; one horizontal sum at the end.

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/dot_simd_avx2.h"

namespace pagoda::quant::avx2 {
namespace {

using simd::half_to_float;

// The 8 int32 partial sums of one block's integer dot product, per weight format.

__m256i block_dot(const BlockQ4_0& x, const int8_t* y) {
  // Values are q - 8: dot(q, y) - dot(8, y), both with unsigned weights (one op fewer
  // than making q signed for the sign trick). Neither int16 sum nears saturation.
  const __m256i yv = simd::load256(y);
  const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(simd::nibbles_to_bytes(x.qs), yv),
                                     _mm256_maddubs_epi16(_mm256_set1_epi8(8), yv));
  return simd::sum_i16_pairs(p);
}

__m256i block_dot(const BlockQ4_1& x, const int8_t* y) {
  return simd::dot_u8_i8(simd::nibbles_to_bytes(x.qs), simd::load256(y));
}

__m256i block_dot(const BlockQ5_0& x, const int8_t* y) {
  // q - 16 as a signed byte: a clear fifth bit means the nibble minus 16, i.e. 0xF0 ORed in.
  const __m256i minus16 = _mm256_andnot_si256(simd::bits_to_bytes(x.qh), _mm256_set1_epi8(-16));
  const __m256i q = _mm256_or_si256(simd::nibbles_to_bytes(x.qs), minus16);
  return simd::dot_i8(q, simd::load256(y));
}

__m256i block_dot(const BlockQ5_1& x, const int8_t* y) {
  const __m256i plus16 = _mm256_and_si256(simd::bits_to_bytes(x.qh), _mm256_set1_epi8(16));
  const __m256i q = _mm256_or_si256(simd::nibbles_to_bytes(x.qs), plus16);
  return simd::dot_u8_i8(q, simd::load256(y));
}

__m256i block_dot(const BlockQ8_0& x, const int8_t* y) {
  return simd::dot_i8(simd::load256(x.qs), simd::load256(y));
}

__m256i block_dot(const BlockIQ4_NL& x, const int8_t* y) {
  // Each nibble indexes the 16-entry codebook: one in-lane byte shuffle looks up all 32.
  const __m256i codebook = simd::both_lanes(simd::load128(kIQ4NLValues));
  const __m256i q = _mm256_shuffle_epi8(codebook, simd::nibbles_to_bytes(x.qs));
  return simd::dot_i8(q, simd::load256(y));
}

template <typename Block, typename Activations>
__m256 block_scale(const Block& x, const Activations& y) {
  return _mm256_set1_ps(half_to_float(x.d) * half_to_float(y.d));
}

// sum_b d_x(b) * d_y(b) * dot(b) for formats without a minimum, paired with Q8_0.
template <typename Block>
float dot_scaled_blocks(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  const int64_t nb = n / kQK;
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    acc0 = _mm256_fmadd_ps(block_scale(x[b], y[b]), _mm256_cvtepi32_ps(block_dot(x[b], y[b].qs)), acc0);
    acc1 = _mm256_fmadd_ps(block_scale(x[b + 1], y[b + 1]),
                           _mm256_cvtepi32_ps(block_dot(x[b + 1], y[b + 1].qs)), acc1);
  }
  if (b < nb) acc0 = _mm256_fmadd_ps(block_scale(x[b], y[b]), _mm256_cvtepi32_ps(block_dot(x[b], y[b].qs)), acc0);
  return simd::hsum(_mm256_add_ps(acc0, acc1));
}

// The same for formats with a minimum m, paired with Q8_1 whose s = d_y * sum(y):
// sum_b d_x * d_y * dot(b) + m * s.
template <typename Block>
float dot_scaled_blocks_with_min(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  const int64_t nb = n / kQK;
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  float mins0 = 0.0f;
  float mins1 = 0.0f;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    mins0 += half_to_float(x[b].m) * half_to_float(y[b].s);
    mins1 += half_to_float(x[b + 1].m) * half_to_float(y[b + 1].s);
    acc0 = _mm256_fmadd_ps(block_scale(x[b], y[b]), _mm256_cvtepi32_ps(block_dot(x[b], y[b].qs)), acc0);
    acc1 = _mm256_fmadd_ps(block_scale(x[b + 1], y[b + 1]),
                           _mm256_cvtepi32_ps(block_dot(x[b + 1], y[b + 1].qs)), acc1);
  }
  if (b < nb) {
    mins0 += half_to_float(x[b].m) * half_to_float(y[b].s);
    acc0 = _mm256_fmadd_ps(block_scale(x[b], y[b]), _mm256_cvtepi32_ps(block_dot(x[b], y[b].qs)), acc0);
  }
  return simd::hsum(_mm256_add_ps(acc0, acc1)) + (mins0 + mins1);
}

}  // namespace

float dot_q4_0(int64_t n, const void* w, const void* a) { return dot_scaled_blocks<BlockQ4_0>(n, w, a); }
float dot_q5_0(int64_t n, const void* w, const void* a) { return dot_scaled_blocks<BlockQ5_0>(n, w, a); }
float dot_q8_0(int64_t n, const void* w, const void* a) { return dot_scaled_blocks<BlockQ8_0>(n, w, a); }
float dot_iq4_nl(int64_t n, const void* w, const void* a) {
  return dot_scaled_blocks<BlockIQ4_NL>(n, w, a);
}
float dot_q4_1(int64_t n, const void* w, const void* a) {
  return dot_scaled_blocks_with_min<BlockQ4_1>(n, w, a);
}
float dot_q5_1(int64_t n, const void* w, const void* a) {
  return dot_scaled_blocks_with_min<BlockQ5_1>(n, w, a);
}

}  // namespace pagoda::quant::avx2
