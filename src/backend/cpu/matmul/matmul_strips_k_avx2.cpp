// Strip kernels of Q4_K and Q5_K (256-value super-blocks) against Q8_K activations. Per
// super-block, row and token: the exact int32 sum over sub-blocks of scale x integer
// sub-block dot, times d_w * d_a, less dmin_w * d_a * sum(min_j * bsum_j).

#include <cstddef>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "quant/blocks.h"
#include "quant/dot_scales.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
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

  // One token, the blocks as stored: per row and super-block the exact integer sums (the
  // scaled sub-block dots, and the minimums' share), then the f32 steps of multiply for
  // the 8 rows at once. The rows are read one after the other, each from start to end, so
  // that the weights stream from memory in address order (8 rows side by side would be 8
  // streams, more than the hardware prefetcher follows); their partial sums wait in
  // scratch, [n_blocks][8] vectors, for the f32 steps.
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    using Block = typename Values::Block;
    const Block* w[kStripRows];
    strip_rows(job, row, n_rows, w);
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    const int64_t n_blocks = job.n_in / kQK_K;
    __m256i* sums = gemv_sums(job);                                         // [n_blocks][8]
    auto* min_dots = reinterpret_cast<__m128i*>(sums + kStripRows * n_blocks);  // [n_blocks][8]
    auto* group_sums = min_dots + kStripRows * n_blocks;                     // [n_blocks]
    for (int64_t b = 0; b < n_blocks; ++b) {
      // Sums of the activations over each sub-block of 32 values, as int16.
      group_sums[b] = _mm_hadd_epi16(load128(a[b].bsums), load128(a[b].bsums + 8));
    }
    for (int r = 0; r < kStripRows; ++r) {
      for (int64_t b = 0; b < n_blocks; ++b) {
        prefetch_ahead(w[r][b].qs);
        prefetch_ahead(w[r][b].qs + 64);
        prefetch_ahead(w[r][b].qs + 128);
        sums[kStripRows * b + r] = row_sum(w[r][b], a[b], group_sums[b], min_dots[kStripRows * b + r]);
      }
    }
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const __m256 ad = _mm256_set1_ps(a[b].d);
      static_assert(offsetof(Block, dmin) == offsetof(Block, d) + sizeof(quant::half));
      __m256 d, dmin;
      strip_half_pairs(w, b, offsetof(Block, d), d, dmin);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(sums + kStripRows * b)), _mm256_mul_ps(d, ad), acc);
      acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(min_dots + kStripRows * b)), _mm256_mul_ps(dmin, ad), acc_min);
    }
    return _mm256_sub_ps(acc, acc_min);
  }

  // The 8 scales and 8 minimums of a super-block as 16 bytes (quant::dot_scales::unpack_q4_K
  // in registers: the scalar form goes through memory, and stalls on the reload). `packed`
  // is the 12 scale bytes b0..b11; 16 bytes are read from it, which stay inside the block.
  static __m128i unpack_scales(const uint8_t* packed) {
    const __m128i v = load128(packed);
    // [b0..b3, b8..b11, b4..b7, b8..b11]: scales 0..3, low bits of scales 4..7, mins 0..3,
    // low bits of mins 4..7 (the high nibbles of b8..b11).
    const __m128i x = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i low = _mm_or_si128(
        _mm_and_si128(x, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
        _mm_and_si128(_mm_srli_epi16(x, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    // The top 2 bits of b0..b3 (b4..b7) are bits 4..5 of scales (mins) 4..7.
    const __m128i top = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(top, 2), _mm_set1_epi8(0x30)));
  }

  // One row's super-block against the activations: 8 int32 partial sums of
  // sum_s scale_s * dot(sub-block s), and in min_dot 4 of sum_s min_s * sum(a over s).
  static __m256i row_sum(const typename Values::Block& w, const BlockQ8_K& a, __m128i group_sums, __m128i& min_dot) {
    const __m256i scales_and_mins = _mm256_cvtepu8_epi16(unpack_scales(w.scales));
    min_dot = _mm_madd_epi16(_mm256_extracti128_si256(scales_and_mins, 1), group_sums);
    const __m128i scales = _mm256_castsi256_si128(scales_and_mins);
    const __m256i both = _mm256_set_m128i(scales, scales);
    __m256i sum = _mm256_setzero_si256();
    for (int sub = 0; sub < 8; ++sub) {
      const __m256i pairs = _mm256_maddubs_epi16(Values::values(w, sub), load256(a.qs + 32 * sub));
      sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, broadcast_i16(both, sub)));
    }
    return sum;
  }

  // Integer dot of sub-block `sub` with C tokens, times the sub-block's scale, added to sum.
  template <int C>
  static void add_sub_block(const Strip& s, const BlockQ8_K* const* a, int64_t b, int sub, __m256i* sum) {
    const __m256i scale = load256(s.scales[sub]);
    #pragma GCC unroll 8
    for (int k0 = 0; k0 < 8; k0 += kChunks) {
      __m256i part[C];
      #pragma GCC unroll 8
      for (int k = k0; k < k0 + kChunks; ++k) {
        const __m256i w = load256(s.qs[sub][k]);
        for (int j = 0; j < C; ++j) {
          accumulate_epi16(part[j], _mm256_maddubs_epi16(w, broadcast4(a[j][b].qs + 32 * sub + 4 * k)), k == k0);
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
      for (int sub = 0; sub < 8; ++sub) add_sub_block<C>(s, a, b, sub, sum);
      // The minimums after the sub-blocks, which so have the registers to themselves.
      for (int j = 0; j < C; ++j) {
        const __m256 ad = _mm256_set1_ps(a[j][b].d);
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_mul_ps(_mm256_loadu_ps(s.d), ad), acc[j]);
        acc_min[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min_dot(s, a[j][b])), _mm256_mul_ps(_mm256_loadu_ps(s.dmin), ad),
                                     acc_min[j]);
      }
    }
    for (int j = 0; j < C; ++j) acc[j] = _mm256_sub_ps(acc[j], acc_min[j]);
  }

  // Lane r: sum over sub-blocks s of row r's min_s times the token's sum over s (exact).
  static __m256i min_dot(const Strip& s, const BlockQ8_K& a) {
    alignas(16) int16_t group_sums[8];  // sums of each 32-value group, pairs (2p, 2p + 1)
    _mm_store_si128(reinterpret_cast<__m128i*>(group_sums), _mm_hadd_epi16(load128(a.bsums), load128(a.bsums + 8)));
    __m256i dot = _mm256_madd_epi16(load256(s.mins[0]), broadcast4(group_sums));
    for (int p = 1; p < 4; ++p) dot = _mm256_add_epi32(dot, _mm256_madd_epi16(load256(s.mins[p]), broadcast4(group_sums + 2 * p)));
    return dot;
  }
};

}  // namespace

// Q4_K values <= 15: 8 steps of 2 * 15 * 127 fit int16; Q5_K (<= 31): 4 steps.
void tile_q4_K(const TileJob& job) { run_strips<ScaleMinFormat<Q4_KValues, 8>>(job); }
void tile_q5_K(const TileJob& job) { run_strips<ScaleMinFormat<Q5_KValues, 4>>(job); }

}  // namespace pagoda::backend::cpu::avx2
