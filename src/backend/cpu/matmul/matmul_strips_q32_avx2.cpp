// Strip kernels of the 32-value block formats against Q8_0 (or Q8_1) activations. Per
// block, row and token: the exact integer dot of the 32 values with the token's quants,
// times d_w * d_a, accumulated in f32; Q4_1 / Q5_1 add m_w * s_a. These are the sums
// and products of the reference dot kernels; only the order of f32 additions differs.

#include <cstddef>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "backend/cpu/matmul/matmul_strip_q32_values.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_1;

// One block of 8 rows: chunk k holds values 4k..4k+3 of row r in lane r.
struct Strip32 {
  uint8_t qs[8][32];
  float d[kStripRows];
  float m[kStripRows];  // minimums (Q4_1 / Q5_1), else unused
};

// One block of two strips (16 rows) against C tokens, for values < 16 (8 steps of
// 2 * 15 * 127 fit int16): part[h * C + j] holds strip h's int16 pair sums for token j.
// Each broadcast of 4 activation bytes feeds both strips' multiplies.
template <int C, class ActivationBlock>
inline void pair_block_parts(const Strip32& first, const Strip32& second, const ActivationBlock* const* a, int64_t b,
                             __m256i* part) {
  #pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {
    const __m256i w0 = load256(first.qs[k]), w1 = load256(second.qs[k]);
    for (int j = 0; j < C; ++j) {
      const __m256i av = broadcast4(a[j][b].qs + 4 * k);
      accumulate_epi16(part[j], _mm256_maddubs_epi16(w0, av), k == 0);
      accumulate_epi16(part[C + j], _mm256_maddubs_epi16(w1, av), k == 0);
    }
  }
}

template <class Values, bool kHasMin>
void repack32(const TileJob& job, int64_t row, int n_rows, Strip32* strip) {
  using Block = typename Values::Block;
  const Block* w[kStripRows] = {};
  for (int r = 0; r < n_rows; ++r) w[r] = weight_row<Block>(job, row + r);
  for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
    __m256i rows[kStripRows], chunks[8];
    for (int r = 0; r < kStripRows; ++r) {
      rows[r] = r < n_rows ? Values::values(w[r][b]) : _mm256_setzero_si256();
      strip[b].d[r] = r < n_rows ? half_to_float(w[r][b].d) : 0.0f;
      if constexpr (kHasMin) strip[b].m[r] = r < n_rows ? half_to_float(w[r][b].m) : 0.0f;
    }
    interleave_rows(rows, chunks);
    for (int k = 0; k < 8; ++k) store256(strip[b].qs[k], chunks[k]);
  }
}

// The activations of tokens col..col + C - 1 as the multiply kernels read them: each
// token's blocks, its blocks' scales as f32 (TileJob::a_scales: d, or for Q8_1 d then s)
// and, for the offset
// formats, the sums of its blocks' quants (TileJob::a_sums; null when the job has none).
template <int C, class ActivationBlock>
struct StripTokens {
  const ActivationBlock* a[C];
  const float* scales[C];
  const int32_t* sums[C];
  StripTokens(const TileJob& job, int64_t col) {
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<ActivationBlock>(job, col + j);
      scales[j] = activation_scales(job, col + j);
      sums[j] = job.a_sums == nullptr ? nullptr : job.a_sums + static_cast<size_t>(col + j) * job.a_sums_stride;
    }
  }
};

// Symmetric formats: signed values, |w| * sign(a, w) through maddubs.
template <class Values>
struct SignedFormat {
  using Strip = Strip32;
  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    repack32<Values, false>(job, row, n_rows, strip);
  }
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    using Block = typename Values::Block;
    const Block* w[kStripRows];
    strip_rows(job, row, n_rows, w);
    const uintptr_t ahead = strip_prefetch_distance(job);
    const BlockQ8_0* a = activation_row<BlockQ8_0>(job, col);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      const __m256i av = load256(a[b].qs);
      __m256i sums[kStripRows];
      for (int r = 0; r < kStripRows; ++r) {
        prefetch_strip_ahead(ahead, &w[r][b]);
        const __m256i wv = Values::values(w[r][b]);
        sums[r] = quad_sums(_mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv)));
      }
      const __m256 scale = _mm256_mul_ps(strip_halves(w, b, offsetof(Block, d)), _mm256_set1_ps(half_to_float(a[b].d)));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(sums)), scale, acc);
    }
    return acc;
  }
  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m256* acc) {
    const StripTokens<C, BlockQ8_0> t(job, col);
    for (int j = 0; j < C; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      __m256i sum[C];
      for (int j = 0; j < C; ++j) sum[j] = _mm256_setzero_si256();
      // |w| * |a| can reach 127 * 127, so the pairs of each step widen to int32 at once.
      // Rolled: unrolled, the compiler would sum the steps as a tree, spilling them.
#pragma GCC unroll 1
      for (int k = 0; k < 8; ++k) {
        const __m256i w = load256(strip[b].qs[k]);
        const __m256i w_abs = _mm256_sign_epi8(w, w);
        for (int j = 0; j < C; ++j) {
          const __m256i av = _mm256_sign_epi8(broadcast4(t.a[j][b].qs + 4 * k), w);
          sum[j] = _mm256_add_epi32(sum[j], quad_sums(_mm256_maddubs_epi16(w_abs, av)));
        }
      }
      const __m256 d = _mm256_loadu_ps(strip[b].d);
      for (int j = 0; j < C; ++j) {
        const __m256 scale = _mm256_mul_ps(d, _mm256_broadcast_ss(t.scales[j] + b));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), scale, acc[j]);
      }
    }
  }
};

// Offset formats: unsigned values q (< 32) standing for q - offset; per block the exact
// sum(q a) - offset * sum(a), with sum(a) from TileJob::a_sums.
template <class Values, int kChunks>
struct OffsetFormat {
  using Strip = Strip32;
  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    repack32<Values, false>(job, row, n_rows, strip);
  }
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    using Block = typename Values::Block;
    const Block* w[kStripRows];
    strip_rows(job, row, n_rows, w);
    const uintptr_t ahead = strip_prefetch_distance(job);
    const BlockQ8_0* a = activation_row<BlockQ8_0>(job, col);
    const int32_t* a_sums = job.a_sums + static_cast<size_t>(col) * job.a_sums_stride;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      const __m256i av = load256(a[b].qs);
      __m256i sums[kStripRows];
      for (int r = 0; r < kStripRows; ++r) {
        prefetch_strip_ahead(ahead, &w[r][b]);
        sums[r] = quad_sums(_mm256_maddubs_epi16(Values::values(w[r][b]), av));
      }
      const __m256i exact = _mm256_add_epi32(row_totals(sums), _mm256_set1_epi32(-Values::kOffset * a_sums[b]));
      const __m256 scale = _mm256_mul_ps(strip_halves(w, b, offsetof(Block, d)), _mm256_set1_ps(half_to_float(a[b].d)));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(exact), scale, acc);
    }
    return acc;
  }
  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m256* acc) {
    const StripTokens<C, BlockQ8_0> t(job, col);
    for (int j = 0; j < C; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      __m256i sum[C];
      for (int j = 0; j < C; ++j) sum[j] = _mm256_set1_epi32(-Values::kOffset * t.sums[j][b]);
      #pragma GCC unroll 8
      for (int k0 = 0; k0 < 8; k0 += kChunks) {
        __m256i part[C];
        #pragma GCC unroll 8
        for (int k = k0; k < k0 + kChunks; ++k) {
          const __m256i w = load256(strip[b].qs[k]);
          for (int j = 0; j < C; ++j) {
            accumulate_epi16(part[j], _mm256_maddubs_epi16(w, broadcast4(t.a[j][b].qs + 4 * k)), k == k0);
          }
        }
        for (int j = 0; j < C; ++j) sum[j] = _mm256_add_epi32(sum[j], quad_sums(part[j]));
      }
      const __m256 d = _mm256_loadu_ps(strip[b].d);
      for (int j = 0; j < C; ++j) {
        const __m256 scale = _mm256_mul_ps(d, _mm256_broadcast_ss(t.scales[j] + b));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), scale, acc[j]);
      }
    }
  }

  // multiply for two strips (16 rows) at once: acc[h * C + j] is strip h, token j. The
  // same integer sums and f32 steps as multiply, so the same bits. (Values < 16 only: one
  // int16 run per block.)
  template <int C>
    requires(kChunks == 8)
  static void multiply_pair(const TileJob& job, const Strip* first, const Strip* second, int64_t col, __m256* acc) {
    const StripTokens<C, BlockQ8_0> t(job, col);
    for (int j = 0; j < 2 * C; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      __m256i part[2 * C];
      pair_block_parts<C>(first[b], second[b], t.a, b, part);
      const __m256 d[2] = {_mm256_loadu_ps(first[b].d), _mm256_loadu_ps(second[b].d)};
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < C; ++j) {
          const __m256i sum = _mm256_add_epi32(_mm256_set1_epi32(-Values::kOffset * t.sums[j][b]), quad_sums(part[h * C + j]));
          const __m256 scale = _mm256_mul_ps(d[h], _mm256_broadcast_ss(t.scales[j] + b));
          acc[h * C + j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[h * C + j]);
        }
      }
    }
  }
};

// Formats with a minimum: unsigned values (< 32), result d_w d_a sum(q a) + m_w s_a.
template <class Values, int kChunks>
struct MinFormat {
  using Strip = Strip32;
  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    repack32<Values, true>(job, row, n_rows, strip);
  }
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    using Block = typename Values::Block;
    const Block* w[kStripRows];
    strip_rows(job, row, n_rows, w);
    const uintptr_t ahead = strip_prefetch_distance(job);
    const BlockQ8_1* a = activation_row<BlockQ8_1>(job, col);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      const __m256i av = load256(a[b].qs);
      __m256i sums[kStripRows];
      for (int r = 0; r < kStripRows; ++r) {
        prefetch_strip_ahead(ahead, &w[r][b]);
        sums[r] = quad_sums(_mm256_maddubs_epi16(Values::values(w[r][b]), av));
      }
      static_assert(offsetof(Block, m) == offsetof(Block, d) + sizeof(quant::half));
      __m256 d, m;
      strip_half_pairs(w, b, offsetof(Block, d), d, m);
      const __m256 scale = _mm256_mul_ps(d, _mm256_set1_ps(half_to_float(a[b].d)));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(sums)), scale, acc);
      acc = _mm256_fmadd_ps(m, _mm256_set1_ps(half_to_float(a[b].s)), acc);
    }
    return acc;
  }
  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m256* acc) {
    const StripTokens<C, BlockQ8_1> t(job, col);
    for (int j = 0; j < C; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      __m256i sum[C];
      for (int j = 0; j < C; ++j) sum[j] = _mm256_setzero_si256();
      #pragma GCC unroll 8
      for (int k0 = 0; k0 < 8; k0 += kChunks) {
        __m256i part[C];
        #pragma GCC unroll 8
        for (int k = k0; k < k0 + kChunks; ++k) {
          const __m256i w = load256(strip[b].qs[k]);
          for (int j = 0; j < C; ++j) {
            accumulate_epi16(part[j], _mm256_maddubs_epi16(w, broadcast4(t.a[j][b].qs + 4 * k)), k == k0);
          }
        }
        for (int j = 0; j < C; ++j) sum[j] = _mm256_add_epi32(sum[j], quad_sums(part[j]));
      }
      const __m256 d = _mm256_loadu_ps(strip[b].d), m = _mm256_loadu_ps(strip[b].m);
      for (int j = 0; j < C; ++j) {
        const __m256 scale = _mm256_mul_ps(d, _mm256_broadcast_ss(t.scales[j] + 2 * b));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), scale, acc[j]);
        acc[j] = _mm256_fmadd_ps(m, _mm256_broadcast_ss(t.scales[j] + 2 * b + 1), acc[j]);
      }
    }
  }

  // multiply for two strips (16 rows) at once: acc[h * C + j] is strip h, token j. The
  // same integer sums and f32 steps as multiply, so the same bits. (Values < 16 only: one
  // int16 run per block.)
  template <int C>
    requires(kChunks == 8)
  static void multiply_pair(const TileJob& job, const Strip* first, const Strip* second, int64_t col, __m256* acc) {
    const StripTokens<C, BlockQ8_1> t(job, col);
    for (int j = 0; j < 2 * C; ++j) acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      __m256i part[2 * C];
      pair_block_parts<C>(first[b], second[b], t.a, b, part);
      const Strip* strips[2] = {first + b, second + b};
      for (int h = 0; h < 2; ++h) {
        const __m256 d = _mm256_loadu_ps(strips[h]->d), m = _mm256_loadu_ps(strips[h]->m);
        for (int j = 0; j < C; ++j) {
          const __m256i sum = quad_sums(part[h * C + j]);
          const __m256 scale = _mm256_mul_ps(d, _mm256_broadcast_ss(t.scales[j] + 2 * b));
          acc[h * C + j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[h * C + j]);
          acc[h * C + j] = _mm256_fmadd_ps(m, _mm256_broadcast_ss(t.scales[j] + 2 * b + 1), acc[h * C + j]);
        }
      }
    }
  }
};

}  // namespace

// |w| <= 127 (Q8_0, IQ4_NL): one step of 2 * 127 * 127 fits int16, not two.
void tile_q8_0(const TileJob& job) { run_strips<SignedFormat<Q8_0Values>>(job); }
void tile_iq4_nl(const TileJob& job) { run_strips<SignedFormat<IQ4_NLValues>>(job); }
// q <= 15: 8 steps of 2 * 15 * 127 fit int16; q <= 31: 4 steps of 2 * 31 * 127.
void tile_q4_0(const TileJob& job) { run_strips<OffsetFormat<Q4_0Values, 8>>(job); }
void tile_q5_0(const TileJob& job) { run_strips<OffsetFormat<Q5_0Values, 4>>(job); }
void tile_q4_1(const TileJob& job) { run_strips<MinFormat<Q4_1Values, 8>>(job); }
void tile_q5_1(const TileJob& job) { run_strips<MinFormat<Q5_1Values, 4>>(job); }

}  // namespace pagoda::backend::cpu::avx2
