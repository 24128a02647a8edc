// Strip kernels of the k-quants (256-value super-blocks) against Q8_K activations. Per
// super-block, row and token: the exact int32 sum over sub-blocks of scale x integer
// sub-block dot, times d_w * d_a; Q4_K / Q5_K subtract dmin_w * d_a * sum(min_j * bsum_j),
// Q6_K's offset of 32 comes off exactly in integers through the activations' block sums.

#include "backend/cpu/matmul_strip_avx2.h"
#include "quant/blocks.h"
#include "quant/dot_scales.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQK_K;

// Sub-block s (0..7) of 32 values: the low (s even) or high (s odd) nibbles of
// qs[32 * (s / 2)...]; Q5_K adds bit s of qh[l] as the fifth bit of value l.
inline __m256i sub_block_nibbles(const uint8_t* qs, int s) {
  const __m256i q = load256(qs + 32 * (s / 2));
  return _mm256_and_si256(s % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0f));
}
struct Q4_KValues {
  using Block = BlockQ4_K;
  static __m256i values(const Block& b, int s) { return sub_block_nibbles(b.qs, s); }
};
struct Q5_KValues {
  using Block = BlockQ5_K;
  static __m256i values(const Block& b, int s) {
    const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(load256(b.qh), s), _mm256_set1_epi8(1));
    return _mm256_or_si256(sub_block_nibbles(b.qs, s), _mm256_slli_epi16(bit, 4));
  }
};

// One super-block of 8 rows for Q4_K / Q5_K. The int16 vectors hold, in 32-bit lane r,
// row r's scale twice (for madd against pair sums) or its mins 2p and 2p + 1.
struct StripK {
  uint8_t qs[8][8][32];  // [sub-block][chunk of 4 values][row x 4]
  int16_t scales[8][16];
  int16_t mins[4][16];
  float d[kStripRows];
  float dmin[kStripRows];
};

template <class Values, int kChunks>
struct ScaleMinFormat {
  using Strip = StripK;

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    using Block = typename Values::Block;
    const Block* w[kStripRows] = {};
    for (int r = 0; r < n_rows; ++r) w[r] = weight_row<Block>(job, row + r);
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      Strip& s = strip[b];
      for (int r = 0; r < kStripRows; ++r) {
        alignas(16) uint32_t packed[4] = {};  // 8 scales then 8 mins, a byte each
        if (r < n_rows) quant::dot_scales::unpack_q4_K(w[r][b].scales, packed);
        const uint8_t* sm = reinterpret_cast<const uint8_t*>(packed);
        for (int j = 0; j < 8; ++j) s.scales[j][2 * r] = s.scales[j][2 * r + 1] = sm[j];
        for (int p = 0; p < 4; ++p) {
          s.mins[p][2 * r] = sm[8 + 2 * p];
          s.mins[p][2 * r + 1] = sm[9 + 2 * p];
        }
        s.d[r] = r < n_rows ? half_to_float(w[r][b].d) : 0.0f;
        s.dmin[r] = r < n_rows ? half_to_float(w[r][b].dmin) : 0.0f;
      }
      for (int sub = 0; sub < 8; ++sub) {
        __m256i rows[kStripRows], chunks[8];
        for (int r = 0; r < kStripRows; ++r) rows[r] = r < n_rows ? Values::values(w[r][b], sub) : _mm256_setzero_si256();
        interleave_rows(rows, chunks);
        for (int k = 0; k < 8; ++k) store256(s.qs[sub][k], chunks[k]);
      }
    }
  }

  // One token, the blocks as stored: per row the exact integer sums, then the f32 steps
  // of multiply (whole super-blocks, the reference's gemv).
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    using Block = typename Values::Block;
    const Block* w[kStripRows] = {};
    for (int r = 0; r < n_rows; ++r) w[r] = weight_row<Block>(job, row + r);
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      alignas(16) int16_t group_sums[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(group_sums), _mm_hadd_epi16(load128(a[b].bsums), load128(a[b].bsums + 8)));
      __m256i sums[kStripRows];
      alignas(32) int32_t min_dots[kStripRows] = {};
      alignas(32) float d[kStripRows] = {}, dmin[kStripRows] = {};
      for (int r = 0; r < kStripRows; ++r) {
        sums[r] = _mm256_setzero_si256();
        if (r >= n_rows) continue;
        alignas(16) uint32_t packed[4];
        quant::dot_scales::unpack_q4_K(w[r][b].scales, packed);
        const uint8_t* sm = reinterpret_cast<const uint8_t*>(packed);
        for (int sub = 0; sub < 8; ++sub) {
          const __m256i pairs = _mm256_maddubs_epi16(Values::values(w[r][b], sub), load256(a[b].qs + 32 * sub));
          sums[r] = _mm256_add_epi32(sums[r], _mm256_madd_epi16(pairs, _mm256_set1_epi16(sm[sub])));
          min_dots[r] += sm[8 + sub] * group_sums[sub];
        }
        d[r] = half_to_float(w[r][b].d);
        dmin[r] = half_to_float(w[r][b].dmin);
      }
      const __m256 ad = _mm256_set1_ps(a[b].d);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(sums)), _mm256_mul_ps(_mm256_load_ps(d), ad), acc);
      acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(min_dots))),
                                _mm256_mul_ps(_mm256_load_ps(dmin), ad), acc_min);
    }
    return _mm256_sub_ps(acc, acc_min);
  }

  // Integer dot of sub-block `sub` with C tokens, times the sub-block's scale, added to sum.
  template <int C>
  static void add_sub_block(const Strip& s, const BlockQ8_K* const* a, int64_t b, int sub, __m256i* sum) {
    const __m256i scale = load256(s.scales[sub]);
    for (int k0 = 0; k0 < 8; k0 += kChunks) {
      __m256i part[C];
      for (int j = 0; j < C; ++j) part[j] = _mm256_setzero_si256();
      for (int k = k0; k < k0 + kChunks; ++k) {
        const __m256i w = load256(s.qs[sub][k]);
        for (int j = 0; j < C; ++j) {
          accumulate_epi16(part[j], _mm256_maddubs_epi16(w, broadcast4(a[j][b].qs + 32 * sub + 4 * k)));
        }
      }
      for (int j = 0; j < C; ++j) sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(part[j], scale));
    }
  }

  // The f32 steps follow the reference build's repacked Q4_K kernel for single tokens (its
  // gemv): one FMA per super-block and row, the minimums in a second accumulator
  // subtracted at the end. (Its gemm, for groups of 4 tokens, adds each pair of
  // sub-blocks on its own; we keep one arithmetic for every batch size so that a token's
  // result never depends on how its batch was cut.)
  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m256* acc) {
    constexpr int kPairsPerStep = 4;
    const BlockQ8_K* a[C];
    __m256 acc_min[C];
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<BlockQ8_K>(job, col + j);
      acc[j] = acc_min[j] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      const Strip& s = strip[b];
      alignas(16) int16_t group_sums[C][8];  // sums of each 32-value group, pairs (2p, 2p + 1)
      for (int j = 0; j < C; ++j) {
        _mm_store_si128(reinterpret_cast<__m128i*>(group_sums[j]),
                        _mm_hadd_epi16(load128(a[j][b].bsums), load128(a[j][b].bsums + 8)));
      }
      const __m256 d = _mm256_loadu_ps(s.d), dmin = _mm256_loadu_ps(s.dmin);
      for (int p0 = 0; p0 < 4; p0 += kPairsPerStep) {
        __m256i sum[C], min_dot[C];
        for (int j = 0; j < C; ++j) sum[j] = min_dot[j] = _mm256_setzero_si256();
        for (int p = p0; p < p0 + kPairsPerStep; ++p) {
          add_sub_block<C>(s, a, b, 2 * p, sum);
          add_sub_block<C>(s, a, b, 2 * p + 1, sum);
          for (int j = 0; j < C; ++j) {
            min_dot[j] = _mm256_add_epi32(min_dot[j], _mm256_madd_epi16(load256(s.mins[p]), broadcast4(group_sums[j] + 2 * p)));
          }
        }
        for (int j = 0; j < C; ++j) {
          const __m256 ad = _mm256_set1_ps(a[j][b].d);
          acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_mul_ps(d, ad), acc[j]);
          acc_min[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min_dot[j]), _mm256_mul_ps(dmin, ad), acc_min[j]);
        }
      }
    }
    for (int j = 0; j < C; ++j) acc[j] = _mm256_sub_ps(acc[j], acc_min[j]);
  }
};

// Q6_K: chunk c (0..7) of 32 values: half n = c / 4 (ql += 64 n, qh += 32 n), then
// m = c % 4 picks low / high nibbles of ql[0..31] / ql[32..63] and bits 2m..2m+1 of qh.
// Values are 0..63 here; the -32 offset is applied once per super-block.
inline __m256i q6_values(const BlockQ6_K& b, int c) {
  const int n = c / 4, m = c % 4;
  const __m256i ql = load256(b.ql + 64 * n + 32 * (m % 2));
  const __m256i low = _mm256_and_si256(m >= 2 ? _mm256_srli_epi16(ql, 4) : ql, _mm256_set1_epi8(0x0f));
  const __m256i qh = _mm256_and_si256(_mm256_srli_epi16(load256(b.qh + 32 * n), 2 * m), _mm256_set1_epi8(3));
  return _mm256_or_si256(low, _mm256_slli_epi16(qh, 4));
}

struct StripQ6 {
  uint8_t qs[8][8][32];     // [chunk of 32 values][step of 4 values][row x 4]
  int16_t scales[16][16];   // [16-value group]: row r's scale twice in lane r
  int16_t pairs[8][16];     // [pair p]: row r's scales 2p, 2p + 1 in lane r
  float d[kStripRows];
};

struct Q6_KFormat {
  using Strip = StripQ6;

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    const BlockQ6_K* w[kStripRows] = {};
    for (int r = 0; r < n_rows; ++r) w[r] = weight_row<BlockQ6_K>(job, row + r);
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      Strip& s = strip[b];
      for (int r = 0; r < kStripRows; ++r) {
        for (int g = 0; g < 16; ++g) {
          const int16_t sc = r < n_rows ? w[r][b].scales[g] : 0;
          s.scales[g][2 * r] = s.scales[g][2 * r + 1] = sc;
          s.pairs[g / 2][2 * r + g % 2] = sc;
        }
        s.d[r] = r < n_rows ? half_to_float(w[r][b].d) : 0.0f;
      }
      for (int c = 0; c < 8; ++c) {
        __m256i rows[kStripRows], chunks[8];
        for (int r = 0; r < kStripRows; ++r) rows[r] = r < n_rows ? q6_values(w[r][b], c) : _mm256_setzero_si256();
        interleave_rows(rows, chunks);
        for (int k = 0; k < 8; ++k) store256(s.qs[c][k], chunks[k]);
      }
    }
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m256* acc) {
    const BlockQ8_K* a[C];
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<BlockQ8_K>(job, col + j);
      acc[j] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      const Strip& s = strip[b];
      __m256i sum[C];
      for (int j = 0; j < C; ++j) sum[j] = _mm256_setzero_si256();
      // Steps of 8 values: 2 * 63 * 127 per maddubs lane, two of them fit int16.
      for (int c = 0; c < 8; ++c) {
        for (int k0 = 0; k0 < 8; k0 += 2) {
          const __m256i scale = load256(s.scales[2 * c + k0 / 4]);
          __m256i part[C];
          for (int j = 0; j < C; ++j) part[j] = _mm256_setzero_si256();
          for (int k = k0; k < k0 + 2; ++k) {
            const __m256i w = load256(s.qs[c][k]);
            for (int j = 0; j < C; ++j) {
              accumulate_epi16(part[j], _mm256_maddubs_epi16(w, broadcast4(a[j][b].qs + 32 * c + 4 * k)));
            }
          }
          for (int j = 0; j < C; ++j) sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(part[j], scale));
        }
      }
      const __m256 d = _mm256_loadu_ps(s.d);
      for (int j = 0; j < C; ++j) {
        // sum sc * (q - 32) * a = sum sc * q * a - 32 * sum_g sc_g * bsum_g, exactly.
        __m256i offset = _mm256_setzero_si256();
        for (int p = 0; p < 8; ++p) {
          offset = _mm256_add_epi32(offset, _mm256_madd_epi16(load256(s.pairs[p]), broadcast4(a[j][b].bsums + 2 * p)));
        }
        const __m256i exact = _mm256_sub_epi32(sum[j], _mm256_slli_epi32(offset, 5));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), _mm256_mul_ps(d, _mm256_set1_ps(a[j][b].d)), acc[j]);
      }
    }
  }
};

}  // namespace

// Q4_K values <= 15: 8 steps of 2 * 15 * 127 fit int16; Q5_K (<= 31): 4 steps.
void tile_q4_K(const TileJob& job) { run_strips<ScaleMinFormat<Q4_KValues, 8>>(job); }
void tile_q5_K(const TileJob& job) { run_strips<ScaleMinFormat<Q5_KValues, 4>>(job); }
void tile_q6_K(const TileJob& job) { run_strips<Q6_KFormat>(job); }

}  // namespace pagoda::backend::cpu::avx2
