// Strip kernels of the formats with a scale per group of 16 values, Q6_K, Q3_K and Q2_K,
// against Q8_K activations. Per super-block, row and token: the exact int32 sum over the
// 16 groups of scale x integer group dot, the values' offset (32 for Q6_K, 4 for Q3_K:
// they are stored unsigned) taken off exactly through the activations' group sums, times
// d_w * d_a. Q2_K's values are unsigned and each group has a minimum instead: as Q4_K's,
// the minimums' share sum_g min_g * bsum_g goes through a second f32 accumulator
// (dmin_w * d_a), subtracted at the end.

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "backend/cpu/matmul/matmul_strip_groups16.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQK_K;

// Q6_K: chunk c (0..7) of 32 values: half n = c / 4 (ql += 64 n, qh += 32 n), then
// m = c % 4 picks low / high nibbles of ql[0..31] / ql[32..63] and bits 2m..2m+1 of qh.
// Values are 0..63 here; the -32 offset is applied once per super-block.
inline __m256i q6_values(const BlockQ6_K& b, int c) {
  const int n = c / 4, m = c % 4;
  const __m256i ql = load256(b.ql + 64 * n + 32 * (m % 2));
  const __m256i low = _mm256_and_si256(m >= 2 ? _mm256_srli_epi16(ql, 4) : ql, _mm256_set1_epi8(0x0f));
  // Bits 2m..2m+1 of each qh byte moved to bits 4..5 by one 16-bit shift; the bits the
  // shift brings in from the neighbouring byte fall outside the mask.
  const __m256i qh = load256(b.qh + 32 * n);
  const __m256i moved = m == 0   ? _mm256_slli_epi16(qh, 4)
                        : m == 1 ? _mm256_slli_epi16(qh, 2)
                        : m == 2 ? qh
                                 : _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(low, _mm256_and_si256(moved, _mm256_set1_epi8(0x30)));
}

// Q3_K: chunk c (0..7) of 32 values, c = 4k + j: bits 2j..2j+1 of qs[32k..32k + 31] with
// bit c of hmask[0..31] above them: q + 4, 0..7 (the stored high bit set means q = low bits,
// clear q = low bits - 4).
inline __m256i q3_values(const BlockQ3_K& b, int c) {
  const int k = c / 4, j = c % 4;
  const __m256i low = _mm256_and_si256(_mm256_srli_epi16(load256(b.qs + 32 * k), 2 * j), _mm256_set1_epi8(3));
  // Bit c of each hmask byte moved to bit 2; the bits the 16-bit shift brings in from the
  // neighbouring byte fall outside the mask.
  const __m256i hmask = load256(b.hmask);
  const __m256i high = c <= 2 ? _mm256_slli_epi16(hmask, 2 - c) : _mm256_srli_epi16(hmask, c - 2);
  return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(4)));
}

// Q2_K: chunk c (0..7) of 32 values, c = 4k + j: bits 2j..2j+1 of qs[32k..32k + 31].
inline __m256i q2_values(const BlockQ2_K& b, int c) {
  return _mm256_and_si256(_mm256_srli_epi16(load256(b.qs + 32 * (c / 4)), 2 * (c % 4)), _mm256_set1_epi8(3));
}

// The formats: their scale side (matmul_strip_groups16.h) and the values of a chunk.
struct Q6_KGroups : Q6_KScales {
  static __m256i values(const Block& b, int c) { return q6_values(b, c); }
};
struct Q3_KGroups : Q3_KScales {
  static __m256i values(const Block& b, int c) { return q3_values(b, c); }
};
struct Q2_KGroups : Q2_KScales {
  static __m256i values(const Block& b, int c) { return q2_values(b, c); }
};

// One super-block of 8 rows. `pairs` weigh the activations' group sums: the scales (their
// share, times the offset, comes off the sum) or Q2_K's minimums.
struct GroupStrip {
  uint8_t qs[8][8][32];     // [chunk of 32 values][step of 4 values][row x 4]
  int16_t scales[16][16];   // [16-value group]: row r's scale twice in lane r
  int16_t pairs[8][16];     // [pair p]: row r's scales (or minimums) 2p, 2p + 1 in lane r
  float d[kStripRows];
  float dmin[kStripRows];   // Q2_K
};

template <class Groups>
struct GroupFormat {
  using Strip = GroupStrip;
  using Block = typename Groups::Block;

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    const Block* w[kStripRows] = {};
    for (int r = 0; r < n_rows; ++r) w[r] = weight_row<Block>(job, row + r);
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      Strip& s = strip[b];
      for (int r = 0; r < kStripRows; ++r) {
        alignas(16) int8_t scales[16] = {}, weights[16] = {};
        if (r < n_rows) {
          const __m128i row_scales = Groups::scales(w[r][b]);
          _mm_store_si128(reinterpret_cast<__m128i*>(scales), row_scales);
          if constexpr (Groups::kMins) {
            _mm_store_si128(reinterpret_cast<__m128i*>(weights), Groups::mins(w[r][b]));
          } else {
            _mm_store_si128(reinterpret_cast<__m128i*>(weights), row_scales);
          }
        }
        for (int g = 0; g < 16; ++g) {
          s.scales[g][2 * r] = s.scales[g][2 * r + 1] = scales[g];
          s.pairs[g / 2][2 * r + g % 2] = weights[g];
        }
        s.d[r] = r < n_rows ? half_to_float(w[r][b].d) : 0.0f;
        if constexpr (Groups::kMins) s.dmin[r] = r < n_rows ? half_to_float(w[r][b].dmin) : 0.0f;
      }
      for (int c = 0; c < 8; ++c) {
        __m256i rows[kStripRows], chunks[8];
        for (int r = 0; r < kStripRows; ++r) rows[r] = r < n_rows ? Groups::values(w[r][b], c) : _mm256_setzero_si256();
        interleave_rows(rows, chunks);
        for (int k = 0; k < 8; ++k) store256(s.qs[c][k], chunks[k]);
      }
    }
  }

  // One token, the blocks as stored: per row the exact integer total of each super-block
  // (offset included; Q2_K's minimums' share beside it), rows one after the other (see
  // gemv_sums), then the f32 steps of multiply for the 8 rows at once.
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    const Block* w[kStripRows];
    strip_rows(job, row, n_rows, w);
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    const int64_t n_blocks = job.n_in / kQK_K;
    __m256i* sums = gemv_sums(job);                       // [n_blocks][8]
    __m256i* min_sums = sums + kStripRows * n_blocks;     // [n_blocks][8]: Q2_K
    for (int r = 0; r < kStripRows; ++r) {
      for (int64_t b = 0; b < n_blocks; ++b) {
        for (size_t line = 0; line < sizeof(Block); line += 64) prefetch_ahead(reinterpret_cast<const char*>(&w[r][b]) + line);
        sums[kStripRows * b + r] = row_sum(w[r][b], a[b]);
        if constexpr (Groups::kMins) {
          min_sums[kStripRows * b + r] = _mm256_madd_epi16(_mm256_cvtepi8_epi16(Groups::mins(w[r][b])), load256(a[b].bsums));
        }
      }
    }
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const __m256 ad = _mm256_set1_ps(a[b].d);
      const __m256 d = strip_halves(w, b, offsetof(Block, d));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(sums + kStripRows * b)), _mm256_mul_ps(d, ad), acc);
      if constexpr (Groups::kMins) {
        const __m256 dmin = strip_halves(w, b, offsetof(Block, dmin));
        acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(min_sums + kStripRows * b)), _mm256_mul_ps(dmin, ad), acc_min);
      }
    }
    return Groups::kMins ? _mm256_sub_ps(acc, acc_min) : acc;
  }

  // One row's super-block against the activations: 8 int32 partial sums of
  // sum_g scale_g * sum(q * a) over the 16 groups of 16 values.
  static __m256i row_sum(const Block& w, const BlockQ8_K& a) {
    const __m256i scales = _mm256_cvtepi8_epi16(Groups::scales(w));  // one per group of 16
    __m256i sum = _mm256_setzero_si256();
    if constexpr (!Groups::kMins) {
      // The stored values are q + offset: offset * sum_g scale_g * (sum of a over g) comes off.
      sum = _mm256_sub_epi32(sum, _mm256_slli_epi32(_mm256_madd_epi16(scales, load256(a.bsums)), Groups::kOffsetShift));
    }
    for (int half = 0; half < 2; ++half) {
      // Groups 8 half .. 8 half + 7 in both 128-bit lanes.
      // (two calls: the permute's selector must be a compile-time constant at any -O level)
      const __m256i group_scales = half == 0 ? _mm256_permute2x128_si256(scales, scales, 0x00)
                                             : _mm256_permute2x128_si256(scales, scales, 0x11);
      for (int m = 0; m < 4; ++m) {  // chunk 4 half + m: groups 2m (low lane) and 2m + 1 (high lane)
        const __m256i pairs = _mm256_maddubs_epi16(Groups::values(w, 4 * half + m), load256(a.qs + 128 * half + 32 * m));
        const __m256i scale = _mm256_shuffle_epi8(
            group_scales, _mm256_setr_epi8(4 * m, 4 * m + 1, 4 * m, 4 * m + 1, 4 * m, 4 * m + 1, 4 * m, 4 * m + 1,
                                           4 * m, 4 * m + 1, 4 * m, 4 * m + 1, 4 * m, 4 * m + 1, 4 * m, 4 * m + 1,
                                           4 * m + 2, 4 * m + 3, 4 * m + 2, 4 * m + 3, 4 * m + 2, 4 * m + 3, 4 * m + 2,
                                           4 * m + 3, 4 * m + 2, 4 * m + 3, 4 * m + 2, 4 * m + 3, 4 * m + 2, 4 * m + 3,
                                           4 * m + 2, 4 * m + 3));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, scale));
      }
    }
    return sum;
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m256* acc) {
    const BlockQ8_K* a[C];
    __m256 acc_min[C];
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<BlockQ8_K>(job, col + j);
      acc[j] = acc_min[j] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      const Strip& s = strip[b];
      __m256i sum[C];
      for (int j = 0; j < C; ++j) sum[j] = _mm256_setzero_si256();
      // Steps of 8 values: 2 * 63 * 127 per maddubs lane, two of them fit int16.
      for (int c = 0; c < 8; ++c) {
        #pragma GCC unroll 4
        for (int k0 = 0; k0 < 8; k0 += 2) {
          const __m256i scale = load256(s.scales[2 * c + k0 / 4]);
          __m256i part[C];
          for (int k = k0; k < k0 + 2; ++k) {
            const __m256i w = load256(s.qs[c][k]);
            for (int j = 0; j < C; ++j) {
              accumulate_epi16(part[j], _mm256_maddubs_epi16(w, broadcast4(a[j][b].qs + 32 * c + 4 * k)), k == k0);
            }
          }
          for (int j = 0; j < C; ++j) sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(part[j], scale));
        }
      }
      const __m256 d = _mm256_loadu_ps(s.d);
      for (int j = 0; j < C; ++j) {
        // sum_g weight_g * bsum_g: the offset's share (sum sc * q * a = sum sc * (q + offset)
        // * a - offset * sum_g sc_g * bsum_g, exactly), or Q2_K's minimums' share.
        __m256i weighted = _mm256_setzero_si256();
        for (int p = 0; p < 8; ++p) {
          weighted = _mm256_add_epi32(weighted, _mm256_madd_epi16(load256(s.pairs[p]), broadcast4(a[j][b].bsums + 2 * p)));
        }
        const __m256 ad = _mm256_set1_ps(a[j][b].d);
        if constexpr (Groups::kMins) {
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_mul_ps(d, ad), acc[j]);
          acc_min[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(weighted), _mm256_mul_ps(_mm256_loadu_ps(s.dmin), ad), acc_min[j]);
        } else {
          const __m256i exact = _mm256_sub_epi32(sum[j], _mm256_slli_epi32(weighted, Groups::kOffsetShift));
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(d, ad), acc[j]);
        }
      }
    }
    if constexpr (Groups::kMins) {
      for (int j = 0; j < C; ++j) acc[j] = _mm256_sub_ps(acc[j], acc_min[j]);
    }
  }
};

}  // namespace

void tile_q6_K(const TileJob& job) { run_strips<GroupFormat<Q6_KGroups>>(job); }
void tile_q3_K(const TileJob& job) { run_strips<GroupFormat<Q3_KGroups>>(job); }
void tile_q2_K(const TileJob& job) { run_strips<GroupFormat<Q2_KGroups>>(job); }

}  // namespace pagoda::backend::cpu::avx2
