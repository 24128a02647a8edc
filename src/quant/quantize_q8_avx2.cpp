// AVX2 forms of the activation quantizers, byte for byte the scalar ones. Q8_0 / Q8_1
// (quantize_activations_q8_*): the same amax, the same id = 127 / amax, the same f32
// product x * id rounded to nearest even, the same scale rounded to half. Q8_K
// (quantize_row_q8_K): the value of largest magnitude (the first of equal ones), iscale =
// -127 / that value, the f32 product iscale * x rounded to nearest even, the clamp at 127,
// the group sums and d = 1 / iscale. They matter when a batch of a few tokens is
// multiplied: the weights are then read once for all of them, and quantizing the
// activations is no longer a vanishing share of the matmul (Q8_K's scalar loop, a branch
// per value to keep the first maximum, had become a few percent of a decoding step).
//
// A block holding an infinity or a NaN, or so small that its scale's reciprocal
// overflows, goes to the scalar quantizer, which defines what those give.

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

constexpr float kMaxFinite = 3.40282347e+38f;

// The lanes of v whose exponent is all ones (an infinity or a NaN), all bits set.
__m256i special_lanes(__m256 v) {
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v), exponent), exponent);
}

// The largest of the 8 lanes of m (finite values: the order of the maxima does not matter).
float lanes_max(__m256 m) {
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  return _mm_cvtss_f32(m4);
}

// v * scale in f32, rounded to the nearest integer (ties to even).
__m256i nearest_ints(__m256 v, __m256 scale) {
  return _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// One 32-value block's quants (int32, in value order over the four vectors) and scale.
// Returns false, having written nothing, for the blocks the scalar quantizer must take.
bool quantize_block(const float* x, __m256i q[4], float& d) {
  __m256 v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  __m256i special = _mm256_setzero_si256();
  for (int i = 0; i < 4; ++i) special = _mm256_or_si256(special, special_lanes(v[i]));
  if (!_mm256_testz_si256(special, special)) return false;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const float amax = lanes_max(_mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3]))));
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  if (!(id <= kMaxFinite)) return false;
  d = amax / 127.0f;
  const __m256 scale = _mm256_set1_ps(id);
  for (int i = 0; i < 4; ++i) q[i] = nearest_ints(v[i], scale);
  return true;
}

// The quants as 32 bytes in value order (each is within [-127, 127]: no saturation).
void store_quants(const __m256i q[4], int8_t* qs) {
  const __m256i pairs = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  // The packs interleave the 128-bit halves: groups of 4 bytes come out as
  // q0[0..3] q1[0..3] q2[0..3] q3[0..3] | q0[4..7] q1[4..7] q2[4..7] q3[4..7].
  const __m256i order = _mm256_permutevar8x32_epi32(pairs, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), order);
}

int32_t sum_quants(const __m256i q[4]) {
  const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
  return _mm_cvtsi128_si32(s4);
}

// IEEE round to nearest even, as core/fp16.h's f32_to_fp16 does for every non-NaN.
uint16_t to_half(float f) { return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

// Q8_0, or Q8_1 (which also keeps s = d * the sum of the quants); `scalar` takes the
// blocks this code leaves.
template <typename Block>
void quantize_row(const float* x, void* y, int64_t n, void (*scalar)(const float*, void*, int64_t)) {
  auto* blocks = static_cast<Block*>(y);
  for (int64_t b = 0; b < n / kQK; ++b) {
    __m256i q[4];
    float d;
    if (!quantize_block(x + b * kQK, q, d)) {
      scalar(x + b * kQK, &blocks[b], kQK);
      continue;
    }
    store_quants(q, blocks[b].qs);
    blocks[b].d = to_half(d);
    if constexpr (requires(Block block) { block.s; }) blocks[b].s = to_half(static_cast<float>(sum_quants(q)) * d);
  }
}

constexpr int kSuperBlockVectors = kQK_K / 8;  // __m256 per Q8_K super-block

// Sums of the four 16-value groups whose quants (int32) are q[0..1], q[2..3], q[4..5],
// q[6..7], in that order.
__m128i group_sums4(const __m256i q[8]) {
  const __m256i g01 = _mm256_hadd_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
  const __m256i g23 = _mm256_hadd_epi32(_mm256_add_epi32(q[4], q[5]), _mm256_add_epi32(q[6], q[7]));
  const __m256i both = _mm256_hadd_epi32(g01, g23);  // per 128-bit half: the halves' partial sums of groups 0..3
  return _mm_add_epi32(_mm256_castsi256_si128(both), _mm256_extracti128_si256(both, 1));
}

// One super-block; false, having written nothing, for those the scalar quantizer takes.
bool quantize_super_block(const float* x, BlockQ8_K& y) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256i special = _mm256_setzero_si256();
  __m256 amax8 = _mm256_setzero_ps();
  for (int i = 0; i < kSuperBlockVectors; ++i) {
    const __m256 v = _mm256_loadu_ps(x + 8 * i);
    special = _mm256_or_si256(special, special_lanes(v));
    amax8 = _mm256_max_ps(amax8, _mm256_andnot_ps(sign, v));
  }
  if (!_mm256_testz_si256(special, special)) return false;
  const float amax = lanes_max(amax8);
  if (amax == 0.0f) {
    y.d = 0.0f;
    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.bsums, 0, sizeof(y.bsums));
    return true;
  }
  // The scalar loop keeps the first value whose magnitude is the largest, sign and all.
  const __m256 amax_all = _mm256_set1_ps(amax);
  float max = 0.0f;
  for (int i = 0; i < kSuperBlockVectors; ++i) {
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
  for (int c = 0; c < kSuperBlockVectors / 8; ++c) {  // 64 values: four groups of 16
    __m256i q[8];
    for (int i = 0; i < 8; ++i) {
      q[i] = _mm256_min_epi32(nearest_ints(_mm256_loadu_ps(x + 64 * c + 8 * i), scale), top);
    }
    store_quants(q, y.qs + 64 * c);
    store_quants(q + 4, y.qs + 64 * c + 32);
    const __m128i sums = group_sums4(q);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y.bsums + 4 * c), _mm_packs_epi32(sums, sums));
  }
  y.d = 1.0f / iscale;
  return true;
}

}  // namespace

void quantize_activations_q8_0(const float* x, void* y, int64_t n) {
  quantize_row<BlockQ8_0>(x, y, n, quant::quantize_activations_q8_0);
}

void quantize_activations_q8_1(const float* x, void* y, int64_t n) {
  quantize_row<BlockQ8_1>(x, y, n, quant::quantize_activations_q8_1);
}

void quantize_row_q8_K(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(y);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    if (!quantize_super_block(x + b * kQK_K, blocks[b])) quant::quantize_row_q8_K(x + b * kQK_K, &blocks[b], kQK_K);
  }
}

}  // namespace pagoda::quant::avx2
