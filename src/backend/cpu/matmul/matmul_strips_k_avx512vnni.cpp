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

#include "backend/cpu/matmul/matmul_strip_k_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ8_K;
using quant::kQK_K;

// One super-block of 16 rows (5248 bytes).
struct alignas(64) StripK16 {
  uint8_t qs[8][8][64];   // [sub-block][chunk of 4 values][row x 4]
  int32_t scales[8][16];  // [sub-block][row]
  int32_t mins[8][16];    // [sub-block][row]: the minimum in both int16 halves, against a bsums pair
  float d[kStrip16Rows];
  float dmin[kStrip16Rows];
};
// Whole cache lines; within the scratch of 16 rows (tile_scratch_bytes per 8 rows).
static_assert(sizeof(StripK16) % 64 == 0 && sizeof(StripK16) <= 2 * (kQK_K / 32) * 384);

template <class Values>
struct ScaleMinFormat16 {
  using Strip = StripK16;
  using Block = typename Values::Block;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    const Block* w[kStrip16Rows];
    strip16_rows(job, row, n_rows, w);
    RepackPrefetch<Block> prefetch(job, row, strip_length(job.n_in));
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      prefetch(b, w, n_rows);
      Strip& s = strip[b];
      repack_scales(w, b, s);
      #pragma GCC unroll 8
      for (int sub = 0; sub < 8; ++sub) {
        __m512i chunks[8];
        sub_block_chunks<Values>(w, b, sub, chunks);
        for (int k = 0; k < 8; ++k) store512(s.qs[sub][k], chunks[k]);
      }
    }
  }

  // The scales, minimums, d and dmin of super-block b of the 16 rows.
  static void repack_scales(const Block* const* w, int64_t b, Strip& s) {
    __m512i scales[8], mins[8];
    scale_min_lanes(w, b, scales, mins);
    for (int j = 0; j < 8; ++j) {
      store512(s.scales[j], scales[j]);
      store512(s.mins[j], _mm512_or_si512(mins[j], _mm512_slli_epi32(mins[j], 16)));
    }
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
      for (int j = 0; j < C; ++j) dot[j] = _mm512_dpbusd_epi32(dot[j], w, broadcast4(a[j][b].qs + 32 * sub + 4 * k));
    }
    const __m512i scale = _mm512_load_si512(s.scales[sub]);
    #pragma GCC unroll 8
    for (int j = 0; j < C; ++j) sum[j] = _mm512_add_epi32(sum[j], _mm512_mullo_epi32(dot[j], scale));
  }

  // Lane r: sum over sub-blocks s of row r's min_s times the token's sum over s (exact;
  // the AVX2 kernel adds each bsums pair first, in int16, where it cannot overflow).
  static __m512i min_dot(const Strip& s, const BlockQ8_K& a) {
    __m512i dot = _mm512_setzero_si512();
    #pragma GCC unroll 8
    for (int sub = 0; sub < 8; ++sub) dot = _mm512_dpwssd_epi32(dot, load512(s.mins[sub]), broadcast4(a.bsums + 2 * sub));
    return dot;
  }

  // The f32 steps of the AVX2 multiply: per super-block one FMA of the scaled sum and one
  // of the minimums' share into a second accumulator, subtracted at the end.
  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    const BlockQ8_K* a[C];
    __m512 acc_min[C];
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<BlockQ8_K>(job, col + j);
      acc[j] = acc_min[j] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      const Strip& s = strip[b];
      prefetch_strip_block<Strip>(job, ahead, b);
      __m512i sum[C];
      for (int j = 0; j < C; ++j) sum[j] = _mm512_setzero_si512();
      for (int sub = 0; sub < 8; ++sub) add_sub_block<C>(s, a, b, sub, sum);
      const __m512 d = _mm512_load_ps(s.d), dmin = _mm512_load_ps(s.dmin);
      #pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const __m512 ad = _mm512_set1_ps(a[j][b].d);
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), _mm512_mul_ps(d, ad), acc[j]);
        acc_min[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min_dot(s, a[j][b])), _mm512_mul_ps(dmin, ad), acc_min[j]);
      }
    }
    for (int j = 0; j < C; ++j) acc[j] = _mm512_sub_ps(acc[j], acc_min[j]);
  }
};

}  // namespace

void tile_q4_K(const TileJob& job) { run_strips16<ScaleMinFormat16<Q4_KValues>>(job, gemv_q4_K); }
void tile_q5_K(const TileJob& job) { run_strips16<ScaleMinFormat16<Q5_KValues>>(job, gemv_q5_K); }

}  // namespace pagoda::backend::cpu::avx512vnni
