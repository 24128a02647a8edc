// Single-token (decoding) kernel of Q8_0 for AVX-512 VNNI: the blocks as stored, no
// repacking, one row at a time from start to end, so that the weights stream from memory
// in address order (the AVX2 kernel reads 8 rows side by side: 8 streams, which DRAM
// serves more slowly on these machines).
//
// Per row, 8 blocks at a time: vpdpbusd on two blocks per instruction (the signed weights
// made unsigned by adding 128, which comes off again as 128 x the activation block's sum,
// TileJob::a_sums), the 4 vectors reduced to the 8 blocks' exact int32 totals; then the
// strip kernels' f32 step, acc = fma(float(total), d_w * d_a, acc), block after block in
// order. So a token's output has the same bits here as in a batch of any size, and as
// on AVX2.

#include <cmath>
#include <cstddef>
#include <cstring>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockQ8_0;
using quant::kQK;

constexpr int kGroupBlocks = 8;  // blocks per step of a row: 4 vectors of 2 blocks

// The token's quants laid out once per tile, [n_in / 256][4] vectors: vector k of group g
// holds block 8 g + k in its low 256 bits and block 8 g + 4 + k in its high ones, so that
// the reduction of the 4 vectors' dot products ends with the 8 blocks in order.
__m512i* lay_out_token(const TileJob& job, int64_t col) {
  auto* quants = reinterpret_cast<__m512i*>(job.scratch);
  const BlockQ8_0* a = activation_row<BlockQ8_0>(job, col);
  for (int64_t g = 0; g < job.n_in / (kQK * kGroupBlocks); ++g) {
    for (int k = 0; k < 4; ++k) quants[4 * g + k] = load_row_pair(a[8 * g + k].qs, a[8 * g + 4 + k].qs);
  }
  return quants;
}

// Lane j of the result: the sum of the 8 int32 lanes of block j, j = 0..7, where dots[k]
// holds block k in 128-bit lanes 0 and 1 and block 4 + k in lanes 2 and 3 (exact).
inline __m256i block_totals(const __m512i dots[4]) {
  // Per 128-bit lane, the 4 vectors' sums of that lane side by side.
  const __m512i t01 = _mm512_add_epi32(_mm512_unpacklo_epi32(dots[0], dots[1]), _mm512_unpackhi_epi32(dots[0], dots[1]));
  const __m512i t23 = _mm512_add_epi32(_mm512_unpacklo_epi32(dots[2], dots[3]), _mm512_unpackhi_epi32(dots[2], dots[3]));
  const __m512i lanes = _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  // Lanes 0 + 1 are blocks 0..3, lanes 2 + 3 blocks 4..7.
  const __m512i even = _mm512_shuffle_i32x4(lanes, lanes, _MM_SHUFFLE(2, 0, 2, 0));
  const __m512i odd = _mm512_shuffle_i32x4(lanes, lanes, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm512_castsi512_si256(_mm512_add_epi32(even, odd));
}

// The f16 scales of 8 consecutive blocks as f32.
inline __m256 block_scales(const BlockQ8_0* w) {
  uint16_t d[kGroupBlocks];
  for (int j = 0; j < kGroupBlocks; ++j) std::memcpy(&d[j], &w[j].d, sizeof(d[j]));
  return _mm256_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(d[0]), static_cast<int16_t>(d[1]), static_cast<int16_t>(d[2]),
                                        static_cast<int16_t>(d[3]), static_cast<int16_t>(d[4]), static_cast<int16_t>(d[5]),
                                        static_cast<int16_t>(d[6]), static_cast<int16_t>(d[7])));
}

float q8_0_row(const TileJob& job, const BlockQ8_0* a_row, const __m512i* quants, const int32_t* a_sums,
               const float* a_scales, int64_t row, const RowPrefetch& prefetch) {
  const BlockQ8_0* w = weight_row<BlockQ8_0>(job, row);
  const int64_t n_blocks = job.n_in / kQK;
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  float acc = 0.0f;
  int64_t b = 0;
  for (; b + kGroupBlocks <= n_blocks; b += kGroupBlocks) {
    prefetch(w + b, kGroupBlocks * sizeof(BlockQ8_0));
    const __m512i* a = quants + 4 * (b / kGroupBlocks);
    __m512i dots[4];
    for (int k = 0; k < 4; ++k) {
      const __m512i q = _mm512_xor_si512(load_row_pair(w[b + k].qs, w[b + 4 + k].qs), bias);  // w + 128
      dots[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, a[k]);
    }
    const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_sums + b));
    const __m256i totals = _mm256_sub_epi32(block_totals(dots), _mm256_slli_epi32(sums, 7));
    alignas(32) float t[kGroupBlocks], s[kGroupBlocks];
    _mm256_store_ps(t, _mm256_cvtepi32_ps(totals));
    _mm256_store_ps(s, _mm256_mul_ps(block_scales(w + b), _mm256_loadu_ps(a_scales + b)));
    for (int j = 0; j < kGroupBlocks; ++j) acc = std::fma(t[j], s[j], acc);
  }
  for (; b < n_blocks; ++b) {  // the blocks after the last whole group
    const __m256i q = _mm256_xor_si256(avx2::load256(w[b].qs), _mm256_set1_epi8(static_cast<char>(0x80)));
    const __m256i dot = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q, avx2::load256(a_row[b].qs));
    const __m128i four = _mm_add_epi32(_mm256_castsi256_si128(dot), _mm256_extracti128_si256(dot, 1));
    const __m128i two = _mm_add_epi32(four, _mm_unpackhi_epi64(four, four));
    const int32_t total = _mm_cvtsi128_si32(_mm_add_epi32(two, _mm_shuffle_epi32(two, 1))) - 128 * a_sums[b];
    acc = std::fma(static_cast<float>(total), avx2::half_to_float(w[b].d) * a_scales[b], acc);
  }
  return acc;
}

}  // namespace

void gemv_q8_0(const TileJob& job) {
  const RowPrefetch prefetch;
  for (int64_t col = 0; col < job.n_cols; ++col) {
    const __m512i* quants = lay_out_token(job, col);
    const BlockQ8_0* a_row = activation_row<BlockQ8_0>(job, col);
    const int32_t* a_sums = job.a_sums + static_cast<size_t>(col) * job.a_sums_stride;
    const float* a_scales = avx2::activation_scales(job, col);
    float* y = job.y + static_cast<size_t>(col) * job.y_stride;
    for (int64_t row = 0; row < job.n_rows; ++row) y[row] = q8_0_row(job, a_row, quants, a_sums, a_scales, row, prefetch);
  }
}

}  // namespace pagoda::backend::cpu::avx512vnni
