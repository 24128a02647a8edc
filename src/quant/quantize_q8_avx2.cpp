// AVX2 forms of the Q8_0 / Q8_1 activation quantizers (quantize_activations_q8_*), byte
// for byte the scalar ones: the same amax, the same id = 127 / amax, the same f32
// product x * id rounded to nearest even, the same scale rounded to half. They matter
// when a batch of a few tokens is multiplied: the weights are then read once for all of
// them, and quantizing the activations is no longer a vanishing share of the matmul.
//
// A block holding an infinity or a NaN, or so small that 127 / amax overflows, goes to
// the scalar quantizer, which defines what those give.

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/quantize.h"

namespace pagoda::quant::avx2 {
namespace {

constexpr float kMaxFinite = 3.40282347e+38f;

// One 32-value block's quants (int32, in value order over the four vectors) and scale.
// Returns false, having written nothing, for the blocks the scalar quantizer must take.
bool quantize_block(const float* x, __m256i q[4], float& d) {
  __m256 v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  __m256i special = _mm256_setzero_si256();  // lanes whose exponent is all ones
  for (int i = 0; i < 4; ++i) {
    special = _mm256_or_si256(special, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(v[i]), exponent), exponent));
  }
  if (!_mm256_testz_si256(special, special)) return false;
  // Finite values: the maximum of |x| does not depend on the order it is taken in.
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                                 _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  const float amax = _mm_cvtss_f32(m4);
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  if (!(id <= kMaxFinite)) return false;
  d = amax / 127.0f;
  const __m256 scale = _mm256_set1_ps(id);
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
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

}  // namespace

void quantize_activations_q8_0(const float* x, void* y, int64_t n) {
  quantize_row<BlockQ8_0>(x, y, n, quant::quantize_activations_q8_0);
}

void quantize_activations_q8_1(const float* x, void* y, int64_t n) {
  quantize_row<BlockQ8_1>(x, y, n, quant::quantize_activations_q8_1);
}

}  // namespace pagoda::quant::avx2
