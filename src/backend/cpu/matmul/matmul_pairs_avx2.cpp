// Pair kernels of the 32-value formats the reference build multiplies row by row: Q8_0,
// Q5_0 against Q8_0 activations, Q4_1, Q5_1 against Q8_1. Each (weight row, token) pair
// keeps its own 8-lane f32 accumulator: per block, acc += d_w d_a * (the block's integer
// products summed in pairs, then in fours), plus for Q4_1 / Q5_1 a sum of m_w * s_a
// fused block by block (in one lane per row: the rows' scales are converted together);
// at the end the 8 lanes are added as the reference adds them (then the minimums), so
// every result is bit for bit the reference's. 4 rows x 2 tokens per call reuse each
// loaded block for several dot products.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

constexpr int kPairRows = 4;
constexpr int kPairCols = 2;
// How far ahead of the rows being multiplied their successors are prefetched.
constexpr size_t kPrefetchRows = 2 * kPairRows;

using quant::BlockQ8_0;

struct Q8_0Signed {
  using Block = quant::BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i values(const Block& b) { return load256(b.qs); }
};
struct Q5_0Signed {
  using Block = quant::BlockQ5_0;
  static constexpr bool kSigned = true;
  static __m256i values(const Block& b) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof(qh));
    // nibble + 16 * bit - 16: where the bit is clear, the nibble with 0xf0 (= -16) or-ed in.
    const __m256i minus16 = _mm256_andnot_si256(bytes_from_bits(qh), _mm256_set1_epi8(static_cast<char>(0xf0)));
    return _mm256_or_si256(unpack_nibbles(b.qs), minus16);
  }
};

struct Q4_1Unsigned {
  using Block = quant::BlockQ4_1;
  static constexpr bool kSigned = false;
  static __m256i values(const Block& b) { return unpack_nibbles(b.qs); }
};
struct Q5_1Unsigned {
  using Block = quant::BlockQ5_1;
  static constexpr bool kSigned = false;
  static __m256i values(const Block& b) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof(qh));
    return _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bytes_from_bits(qh), _mm256_set1_epi8(0x10)));
  }
};

// Integer products of a block, summed in fours: signed values through |w| * sign(a, w),
// unsigned ones (the formats with a minimum) directly.
template <class Format>
__m256i block_quads(__m256i wv, __m256i av) {
  if constexpr (Format::kSigned) {
    return quad_sums(_mm256_maddubs_epi16(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(av, wv)));
  } else {
    return quad_sums(_mm256_maddubs_epi16(wv, av));
  }
}

// (a0 + a4) + (a2 + a6) + ((a1 + a5) + (a3 + a7)), the reference's order.
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Block b's scales of rows w[0..R) (R <= 4) in f32, converted at once: lane 2i is row
// i's d, lane 2i + 1 its minimum m (0 for the formats without one). Every product and
// fma taken of them lane-wise rounds as the scalar one would.
template <class Format, int R>
__m256 block_scales(const typename Format::Block* const* w, int64_t b) {
  static_assert(R <= 4);
  uint32_t dm[4] = {};
  for (int i = 0; i < R; ++i) {
    if constexpr (Format::kSigned) {
      dm[i] = w[i][b].d;
    } else {
      static_assert(offsetof(typename Format::Block, m) == sizeof(quant::half));
      std::memcpy(&dm[i], &w[i][b], sizeof(dm[i]));  // d in the low half, m in the high one
    }
  }
  return _mm256_cvtph_ps(_mm_setr_epi32(static_cast<int>(dm[0]), static_cast<int>(dm[1]),
                                        static_cast<int>(dm[2]), static_cast<int>(dm[3])));
}

template <class Format, int R, int C>
void pair_block(const TileJob& job, int64_t row, int64_t col) {
  using Block = typename Format::Block;
  // Activations: Q8_0 for the symmetric formats, Q8_1 (with s = d * sum q) for the others.
  using Act = std::conditional_t<Format::kSigned, quant::BlockQ8_0, quant::BlockQ8_1>;
  const Block* w[R];
  const Act* a[C];
  for (int i = 0; i < R; ++i) w[i] = weight_row<Block>(job, row + i);
  for (int j = 0; j < C; ++j) a[j] = activation_row<Act>(job, col + j);
  __m256 acc[R][C];
  __m256 mins[C];  // lane 2i + 1: row i's sum of m_w * s_a (the other lanes are unused)
  for (int j = 0; j < C; ++j) {
    mins[j] = _mm256_setzero_ps();
    for (int i = 0; i < R; ++i) acc[i][j] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
    const __m256 scales = block_scales<Format, R>(w, b);
    __m256i av[C];
    __m256 dd[C];  // lane 2i: d_w of row i times d_a of token j
    for (int j = 0; j < C; ++j) {
      av[j] = load256(a[j][b].qs);
      dd[j] = _mm256_mul_ps(scales, _mm256_set1_ps(half_to_float(a[j][b].d)));
      if constexpr (!Format::kSigned) {
        mins[j] = _mm256_fmadd_ps(scales, _mm256_set1_ps(half_to_float(a[j][b].s)), mins[j]);
      }
    }
    for (int i = 0; i < R; ++i) {
      // Decoding streams every weight once from memory: ask for the rows two calls
      // ahead now, so their loads overlap this call's arithmetic. A prefetch never
      // faults, so the address (an integer: it may lie past the tensor) needs no check.
      const uintptr_t ahead = reinterpret_cast<uintptr_t>(&w[i][b]) + kPrefetchRows * job.w_stride;
      _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
      const __m256i wv = Format::values(w[i][b]);
      const __m256i lane = _mm256_set1_epi32(2 * i);
      for (int j = 0; j < C; ++j) {
        const __m256i quads = block_quads<Format>(wv, av[j]);
        acc[i][j] = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(dd[j], lane), _mm256_cvtepi32_ps(quads), acc[i][j]);
      }
    }
  }
  for (int j = 0; j < C; ++j) {
    alignas(32) float m[8];
    _mm256_store_ps(m, mins[j]);
    for (int i = 0; i < R; ++i) {
      job.y[static_cast<size_t>(col + j) * job.y_stride + static_cast<size_t>(row + i)] = hsum(acc[i][j]) + m[2 * i + 1];
    }
  }
}

template <class Format, int R, int C>
void pair_block_at(const TileJob& job, int64_t row, int64_t col, int nr, int nc) {
  if constexpr (R > 1) {
    if (nr < R) return pair_block_at<Format, R - 1, C>(job, row, col, nr, nc);
  }
  if constexpr (C > 1) {
    if (nc < C) return pair_block_at<Format, R, C - 1>(job, row, col, nr, nc);
  }
  pair_block<Format, R, C>(job, row, col);
}

template <class Format>
void run_pairs(const TileJob& job) {
  for (int64_t col = 0; col < job.n_cols; col += kPairCols) {
    const int nc = static_cast<int>(job.n_cols - col < kPairCols ? job.n_cols - col : kPairCols);
    for (int64_t row = 0; row < job.n_rows; row += kPairRows) {
      const int nr = static_cast<int>(job.n_rows - row < kPairRows ? job.n_rows - row : kPairRows);
      pair_block_at<Format, kPairRows, kPairCols>(job, row, col, nr, nc);
    }
  }
}

}  // namespace

void pairs_q8_0(const TileJob& job) { run_pairs<Q8_0Signed>(job); }
void pairs_q5_0(const TileJob& job) { run_pairs<Q5_0Signed>(job); }
void pairs_q4_1(const TileJob& job) { run_pairs<Q4_1Unsigned>(job); }
void pairs_q5_1(const TileJob& job) { run_pairs<Q5_1Unsigned>(job); }

}  // namespace pagoda::backend::cpu::avx2
