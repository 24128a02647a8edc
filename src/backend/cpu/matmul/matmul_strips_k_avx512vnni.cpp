// AVX-512 VNNI strip kernels of Q4_K and Q5_K (256-value super-blocks) against Q8_K
// activations: 16 rows per strip, vpdpbusd (the values are unsigned already, 0..15 /
// 0..31). Per super-block, row and token the exact int32 sum over sub-blocks of scale x
// integer sub-block dot, and the minimums' share sum(min_j * bsum_j); then the f32 steps
// of the AVX2 kernels (matmul_strips_k_avx2.cpp) lane by lane: the same bits.
//
// A scaled sub-block dot does not fit the int16 lanes that madd would multiply (32 values
// x 31 x 128 > 32767), so each sub-block's dot is formed on its own in int32 and then
// multiplied by its scale (vpmulld): exact, as the AVX2 kernels' int16 steps are.

#include <cstddef>
#include <type_traits>

#include "backend/cpu/matmul/matmul_strip_k_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ8_K;
using quant::kQK_K;

// One super-block of 16 rows (4992 bytes).
struct alignas(64) StripK16 {
  uint8_t qs[8][8][64];      // [sub-block][chunk of 4 values][row x 4]
  int32_t scales[8][16];     // [sub-block][row]
  int32_t min_pairs[4][16];  // [pair p][row]: the minimums of sub-blocks 2p, 2p + 1 as int16
  float d[kStrip16Rows];
  float dmin[kStrip16Rows];
};
// Whole cache lines; within the scratch of 16 rows (tile_scratch_bytes per 8 rows).
static_assert(sizeof(StripK16) % 64 == 0 && sizeof(StripK16) <= 2 * (kQK_K / 32) * 384);

// The f32 steps of the AVX2 multiply, for the scratch strips and the kept copies alike: per
// super-block one FMA of the scaled sum and one of the minimums' share into a second
// accumulator, subtracted at the end. Format::add_scaled_sums<C>(s, a, b, sum) adds each
// token's exact sum over the sub-blocks of scale x integer dot; Format::min_pairs(s, m)
// gives the minimums of sub-blocks 2p and 2p + 1 as the int16 halves of the lanes of m[p],
// so that one vpdpwssd per pair of sub-blocks against the token's sums over those two
// gives lane r the sum over sub-blocks of row r's minimum times the token's sum over the
// sub-block (exact; each sum over a sub-block is its bsums pair added in int16, where it
// cannot overflow, as the AVX2 kernel adds them).
template <class Format, int C>
void multiply_scale_min(const TileJob& job, const typename Format::Strip* strip, int64_t col, __m512* acc,
                        const char* ahead) {
  const BlockQ8_K* a[C];
  __m512 acc_min[C];
  for (int j = 0; j < C; ++j) {
    a[j] = activation_row<BlockQ8_K>(job, col + j);
    acc[j] = acc_min[j] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
    const typename Format::Strip& s = strip[b];
    prefetch_strip_block<typename Format::Strip>(job, ahead, b);
    __m512i sum[C];
    for (int j = 0; j < C; ++j) sum[j] = _mm512_setzero_si512();
    Format::template add_scaled_sums<C>(s, a, b, sum);
    __m512i mins[4];
    Format::min_pairs(s, mins);
    const __m512 d = _mm512_load_ps(s.d), dmin = _mm512_load_ps(s.dmin);
    #pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      alignas(16) int16_t group_sums[8];  // the token's sum over each sub-block
      _mm_store_si128(reinterpret_cast<__m128i*>(group_sums),
                      _mm_hadd_epi16(avx2::load128(a[j][b].bsums), avx2::load128(a[j][b].bsums + 8)));
      __m512i min_dot = _mm512_setzero_si512();
      #pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) min_dot = _mm512_dpwssd_epi32(min_dot, mins[p], broadcast4(group_sums + 2 * p));
      const __m512 ad = _mm512_set1_ps(a[j][b].d);
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), _mm512_mul_ps(d, ad), acc[j]);
      acc_min[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min_dot), _mm512_mul_ps(dmin, ad), acc_min[j]);
    }
  }
  for (int j = 0; j < C; ++j) acc[j] = _mm512_sub_ps(acc[j], acc_min[j]);
}

template <class Values>
struct ScaleMinFormat16 {
  using Strip = StripK16;
  using Block = typename Values::Block;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_strip_block<Block>(job, row, n_rows, strip_length(job.n_in), [&](const Block* const* w, int64_t b) {
      Strip& s = strip[b];
      repack_scales(w, b, s);
      #pragma GCC unroll 8
      for (int sub = 0; sub < 8; ++sub) {
        __m512i chunks[8];
        sub_block_chunks<Values>(w, b, sub, chunks);
        for (int k = 0; k < 8; ++k) store512(s.qs[sub][k], chunks[k]);
      }
    });
  }

  // The scales, minimums, d and dmin of super-block b of the 16 rows.
  static void repack_scales(const Block* const* w, int64_t b, Strip& s) {
    __m512i scales[8], mins[8];
    scale_min_lanes(w, b, scales, mins);
    for (int j = 0; j < 8; ++j) store512(s.scales[j], scales[j]);
    for (int p = 0; p < 4; ++p) store512(s.min_pairs[p], _mm512_or_si512(mins[2 * p], _mm512_slli_epi32(mins[2 * p + 1], 16)));
    store_d_dmin(w, b, s.d, s.dmin);
  }

  // Integer dot of sub-block `sub` with C tokens (exact in int32), times the sub-block's
  // scale, added to sum.
  template <int C>
  static void add_sub_block(const Strip& s, const BlockQ8_K* const* a, int64_t b, int sub, __m512i* sum) {
    __m512i dot[C];
    for (int j = 0; j < C; ++j) dot[j] = _mm512_setzero_si512();
    #pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m512i w = load512(s.qs[sub][k]);
      #pragma GCC unroll 8
      for (int j = 0; j < C; ++j) dot[j] = dpbusd_broadcast(dot[j], w, a[j][b].qs + 32 * sub + 4 * k);
    }
    const __m512i scale = _mm512_load_si512(s.scales[sub]);
    #pragma GCC unroll 8
    for (int j = 0; j < C; ++j) sum[j] = _mm512_add_epi32(sum[j], _mm512_mullo_epi32(dot[j], scale));
  }

  template <int C>
  static void add_scaled_sums(const Strip& s, const BlockQ8_K* const* a, int64_t b, __m512i* sum) {
    for (int sub = 0; sub < 8; ++sub) add_sub_block<C>(s, a, b, sub, sum);
  }

  static void min_pairs(const Strip& s, __m512i mins[4]) {
    for (int p = 0; p < 4; ++p) mins[p] = _mm512_load_si512(s.min_pairs[p]);
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    multiply_scale_min<ScaleMinFormat16, C>(job, strip, col, acc, ahead);
  }
};

// The kept copies of Q4_K and Q5_K (TileKernel::repack): each super-block of 16 rows with
// its qs bytes moved into place but not taken apart (the nibbles are split as they are
// multiplied, once per group of tokens), the scales and minimums as bytes, d and dmin as
// f32: 2432 bytes against Q4_K's 2304 as stored (Q5_K 2944 against 2816). The strips
// of ScaleMinFormat16 hold a byte a value (5248): streamed from memory on every step,
// they would cost about what repacking them does.
struct alignas(64) PackedStripQ4_K {
  uint8_t qs[4][8][64];   // [pair p][chunk k]: bytes 32p + 4k.. of row r's qs in lane r (values 4k.. of
                          // sub-block 2p in the low nibbles, of 2p + 1 in the high ones)
  uint8_t scales[8][16];  // [sub-block][row]
  uint8_t mins[8][16];    // [sub-block][row]
  float d[kStrip16Rows];
  float dmin[kStrip16Rows];
};
struct alignas(64) PackedStripQ5_K : PackedStripQ4_K {
  uint8_t qh[8][64];  // [chunk k]: bytes 4k.. of row r's qh in lane r
};
static_assert(sizeof(PackedStripQ4_K) == 2432 && sizeof(PackedStripQ5_K) == 2944);

template <class Values>
struct PackedK16 {
  using Block = typename Values::Block;
  static constexpr bool kHighBits = std::is_same_v<Block, BlockQ5_K>;
  using Strip = std::conditional_t<kHighBits, PackedStripQ5_K, PackedStripQ4_K>;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_strip_block<Block>(job, row, n_rows, strip_length(job.n_in), [&](const Block* const* w, int64_t b) {
      Strip& s = strip[b];
      for (int p = 0; p < 4; ++p) move_into_place(w, b, offsetof(Block, qs) + 32 * p, s.qs[p]);
      if constexpr (kHighBits) move_into_place(w, b, offsetof(Block, qh), s.qh);
      __m512i scales[8], mins[8];
      scale_min_lanes(w, b, scales, mins);
      for (int j = 0; j < 8; ++j) {
        _mm_store_si128(reinterpret_cast<__m128i*>(s.scales[j]), _mm512_cvtepi32_epi8(scales[j]));
        _mm_store_si128(reinterpret_cast<__m128i*>(s.mins[j]), _mm512_cvtepi32_epi8(mins[j]));
      }
      store_d_dmin(w, b, s.d, s.dmin);
    });
  }

  template <int C>
  static void add_scaled_sums(const Strip& s, const BlockQ8_K* const* a, int64_t b, __m512i* sum) {
    for (int p = 0; p < 4; ++p) add_sub_block_pair<C>(s, a, b, p, sum);
  }

  // The minimums, kept as bytes, widened: sub-block 2p's into the low int16 half of the
  // lanes of mins[p], 2p + 1's into the high one.
  static void min_pairs(const Strip& s, __m512i mins[4]) {
    const auto widened = [&](int sub) {
      return _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s.mins[sub])));
    };
    for (int p = 0; p < 4; ++p) mins[p] = _mm512_or_si512(widened(2 * p), _mm512_slli_epi32(widened(2 * p + 1), 16));
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    multiply_scale_min<PackedK16, C>(job, strip, col, acc, ahead);
  }

 private:
  // Integer dots of sub-blocks 2p and 2p + 1 with C tokens (exact in int32), each times
  // its sub-block's scale, added to sum: the nibbles of each packed vector serve both.
  template <int C>
  static void add_sub_block_pair(const Strip& s, const BlockQ8_K* const* a, int64_t b, int p, __m512i* sum) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512i low[C], high[C];
    for (int j = 0; j < C; ++j) low[j] = high[j] = _mm512_setzero_si512();
    #pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m512i packed = load512(s.qs[p][k]);
      __m512i first = _mm512_and_si512(packed, low4), second = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4);
      if constexpr (kHighBits) {
        // Bit s of each qh byte to bit 4 for sub-blocks s = 2p and 2p + 1, as Q5_KValues
        // moves it; nibbles | (moved & 0x10).
        const __m512i qh = load512(s.qh[k]), bit = _mm512_set1_epi8(0x10);
        first = _mm512_ternarylogic_epi32(first, shift_bit_to_4(qh, 2 * p), bit, 0xf8);
        second = _mm512_ternarylogic_epi32(second, shift_bit_to_4(qh, 2 * p + 1), bit, 0xf8);
      }
      #pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        low[j] = dpbusd_broadcast(low[j], first, a[j][b].qs + 64 * p + 4 * k);
        high[j] = dpbusd_broadcast(high[j], second, a[j][b].qs + 64 * p + 32 + 4 * k);
      }
    }
    const __m512i scale_low = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s.scales[2 * p])));
    const __m512i scale_high = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s.scales[2 * p + 1])));
    #pragma GCC unroll 8
    for (int j = 0; j < C; ++j) {
      sum[j] = _mm512_add_epi32(sum[j], _mm512_add_epi32(_mm512_mullo_epi32(low[j], scale_low),
                                                         _mm512_mullo_epi32(high[j], scale_high)));
    }
  }

  static __m512i shift_bit_to_4(__m512i qh, int s) { return s <= 4 ? _mm512_slli_epi16(qh, 4 - s) : _mm512_srli_epi16(qh, s - 4); }
};

}  // namespace

void tile_q4_K(const TileJob& job) { run_strips16<ScaleMinFormat16<Q4_KValues>, PackedK16<Q4_KValues>>(job, gemv_q4_K); }
void tile_q5_K(const TileJob& job) { run_strips16<ScaleMinFormat16<Q5_KValues>, PackedK16<Q5_KValues>>(job, gemv_q5_K); }
size_t repack_q4_K(const TileJob& job, std::byte* out) { return repack_strips16<PackedK16<Q4_KValues>>(job, out); }
size_t repack_q5_K(const TileJob& job, std::byte* out) { return repack_strips16<PackedK16<Q5_KValues>>(job, out); }

}  // namespace pagoda::backend::cpu::avx512vnni
