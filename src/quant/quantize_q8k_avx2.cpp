// AVX2 form of the Q8_K activation quantizer (quantize_row_q8_K), byte for byte the
// scalar one: the value of largest magnitude (the first of equal ones), iscale = -127 /
// that value, the f32 product iscale * x rounded to nearest even, the clamp at 127, the
// group sums and d = 1 / iscale. The k-quants' matmuls quantize each token's activations
// on every call; for a batch of tokens, where the weights are read once for all of them,
// the scalar loop (a branch per value to keep the first maximum) had become a few percent
// of a decoding step.
//
// A super-block holding an infinity or a NaN, or so small that -127 / max overflows,
// goes to the scalar quantizer, which defines what those give.

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/quantize.h"

namespace pagoda::quant::avx2 {
namespace {

constexpr int kVectors = kQK_K / 8;  // __m256 per super-block

// Sums of the four 16-value groups whose quants (int32) are q[0..1], q[2..3], q[4..5],
// q[6..7], in that order.
__m128i group_sums4(const __m256i q[8]) {
  const __m256i g01 = _mm256_hadd_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
  const __m256i g23 = _mm256_hadd_epi32(_mm256_add_epi32(q[4], q[5]), _mm256_add_epi32(q[6], q[7]));
  const __m256i both = _mm256_hadd_epi32(g01, g23);  // per 128-bit half: the halves' partial sums of groups 0..3
  return _mm_add_epi32(_mm256_castsi256_si128(both), _mm256_extracti128_si256(both, 1));
}

// 32 quants (int32, in value order over q[0..3]; each within [-127, 127]) as bytes.
void store_bytes(const __m256i q[4], int8_t* out) {
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  // The packs interleave the 128-bit halves: groups of 4 bytes come out as
  // q0[0..3] q1[0..3] q2[0..3] q3[0..3] | q0[4..7] q1[4..7] q2[4..7] q3[4..7].
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

// One super-block; false, having written nothing, for those the scalar quantizer takes.
bool quantize_block(const float* x, BlockQ8_K& y) {
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256i special = _mm256_setzero_si256();  // lanes whose exponent is all ones
  __m256 amax8 = _mm256_setzero_ps();
  for (int i = 0; i < kVectors; ++i) {
    const __m256 v = _mm256_loadu_ps(x + 8 * i);
    const __m256i bits = _mm256_castps_si256(v);
    special = _mm256_or_si256(special, _mm256_cmpeq_epi32(_mm256_and_si256(bits, exponent), exponent));
    amax8 = _mm256_max_ps(amax8, _mm256_andnot_ps(sign, v));
  }
  if (!_mm256_testz_si256(special, special)) return false;
  // Finite values: the maximum of |x| does not depend on the order it is taken in.
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax8), _mm256_extractf128_ps(amax8, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float amax = _mm_cvtss_f32(m4);
  if (amax == 0.0f) {
    y.d = 0.0f;
    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.bsums, 0, sizeof(y.bsums));
    return true;
  }
  // The scalar loop keeps the first value whose magnitude is the largest, sign and all.
  const __m256 amax_all = _mm256_set1_ps(amax);
  float max = 0.0f;
  for (int i = 0; i < kVectors; ++i) {
    const __m256 magnitude = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i));
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(magnitude, amax_all, _CMP_EQ_OQ));
    if (hits != 0) {
      max = x[8 * i + std::countr_zero(static_cast<unsigned>(hits))];
      break;
    }
  }
  const float iscale = -127.0f / max;
  if (!std::isfinite(iscale)) return false;

  // |iscale * x| <= 127 (1 + 2^-23) for every x: within int32, rounding to at most 127 in
  // magnitude, so the clamp is the scalar code's and the packs never saturate.
  const __m256 scale = _mm256_set1_ps(iscale);
  const __m256i top = _mm256_set1_epi32(127);
  for (int c = 0; c < kVectors / 8; ++c) {  // 64 values: four groups of 16
    __m256i q[8];
    for (int i = 0; i < 8; ++i) {
      const __m256 product = _mm256_mul_ps(_mm256_loadu_ps(x + 64 * c + 8 * i), scale);
      const __m256 rounded = _mm256_round_ps(product, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q[i] = _mm256_min_epi32(_mm256_cvtps_epi32(rounded), top);
    }
    store_bytes(q, y.qs + 64 * c);
    store_bytes(q + 4, y.qs + 64 * c + 32);
    const __m128i sums = group_sums4(q);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y.bsums + 4 * c), _mm_packs_epi32(sums, sums));
  }
  y.d = 1.0f / iscale;
  return true;
}

}  // namespace

void quantize_row_q8_K(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(y);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    if (!quantize_block(x + b * kQK_K, blocks[b])) quant::quantize_row_q8_K(x + b * kQK_K, &blocks[b], kQK_K);
  }
}

}  // namespace pagoda::quant::avx2
