// AMX strip kernels of Q4_K and Q5_K against Q8_K activations, for tiles of 4 tokens or
// more: per super-block, row and token the same integer sums as the VNNI strips
// (matmul_strips_k_avx512vnni.cpp), formed on the tile unit, then the same f32 steps on
// the same values, so the same bits.
//
// A super-block's sum is sum_j scale_j x dot_j over its 8 sub-blocks, a 6-bit scale per
// row and sub-block; the tile unit adds products along K without a stop per sub-block,
// so the scales go into the weights' bytes. With scale = 8 hi + lo (hi, lo < 8), q x hi
// and q x lo are at most 31 x 7 and fit the unsigned operand of tdpbusd, and
// sum_j scale_j dot_j = 8 (q hi . a) + (q lo . a): two K = 256 products, exact in int32.
// The minimums' share sum_j min_j bsum_j is formed with vpdpwssd, as the VNNI strips do.
//
// The weights are the A operand (16 rows x 64 values: each row's own bytes, unpacked and
// scaled, no transpose), the activations the B operand (matmul_strip_amx.h). Every run
// (run_dwords: values 8 k .. 8 k + 7 of each sub-block) meets the scales in the same
// places, so one factor vector per row and super-block serves all four, and a run's
// nibbles are the low and high halves of 4 qwords of qs.

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "backend/cpu/matmul/matmul_strip_amx.h"
#include "backend/cpu/matmul/matmul_strip_k_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::amx {
namespace {

using avx512vnni::kStrip16Rows;
using avx512vnni::load512;
using avx512vnni::store512;
using quant::BlockQ8_K;
using quant::kQK_K;

// One super-block of 16 rows as A tiles.
struct alignas(64) WeightTiles {
  uint8_t hi[4][kStrip16Rows][64];  // [run][row]: q x (scale >> 3) of the run's 64 values, in run order
  uint8_t lo[4][kStrip16Rows][64];  // q x (scale & 7)
  int32_t min_pairs[kStrip16Rows][4];  // [row][p]: minimums of sub-blocks 2 p, 2 p + 1 as 16-bit halves
  float d[kStrip16Rows];
  float dmin[kStrip16Rows];
};
static_assert(sizeof(WeightTiles) % 64 == 0);

template <class Values>
struct TileFormat {
  using Block = typename Values::Block;
  using WeightTiles = amx::WeightTiles;
  using Accumulators = amx::Accumulators<true>;

  // Run k's 64 values of a row (the layout of the file's head): values 8 k .. 8 k + 7 of
  // sub-blocks 0, 2, 4, 6 (the low nibbles of qs qwords k, k + 4, k + 8, k + 12), then
  // of sub-blocks 1, 3, 5, 7 (their high nibbles). qs0 / qs1: the block's 128 qs bytes.
  static __m512i run_values(const Block& block, __m512i qs0, __m512i qs1, int k) {
    const __m512i qwords = _mm512_setr_epi64(k, k + 4, k + 8, k + 12, k, k + 4, k + 8, k + 12);
    const __m512i nibble_shift = _mm512_setr_epi64(0, 0, 0, 0, 0x0004000400040004, 0x0004000400040004,
                                                   0x0004000400040004, 0x0004000400040004);
    __m512i q = _mm512_and_si512(_mm512_srlv_epi16(_mm512_permutex2var_epi64(qs0, qwords, qs1), nibble_shift),
                                 _mm512_set1_epi8(0x0f));
    if constexpr (requires { block.qh; }) {
      // Value l of sub-block j has bit j of qh[l] as its fifth: qh qword k, each of its
      // copies shifted by its sub-block, bit 0 of each byte then moved to bit 4.
      int64_t qh;
      std::memcpy(&qh, block.qh + 8 * k, sizeof(qh));
      const __m512i bits = _mm512_srlv_epi64(_mm512_set1_epi64(qh), _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7));
      q = _mm512_ternarylogic_epi32(q, _mm512_slli_epi16(bits, 4), _mm512_set1_epi8(0x10), 0xf8);  // q | (b & 0x10)
    }
    return q;
  }

  // The A tiles of super-block b of the 16 rows w.
  static void prepare_block(const Block* const* w, int64_t b, WeightTiles& s) {
    // Word i of every run: the factor of sub-block 2 (i / 4) (i < 16), 2 ((i - 16) / 4) + 1.
    const __m512i factor_words = _mm512_setr_epi64(0x0000000000000000, 0x0002000200020002, 0x0004000400040004,
                                                   0x0006000600060006, 0x0001000100010001, 0x0003000300030003,
                                                   0x0005000500050005, 0x0007000700070007);
    for (int i = 0; i < 8; ++i) {
      const int r0 = avx512vnni::paired_row(i), r1 = r0 + 4;
      // [scales 0..7, mins 0..7] of row r0 in the low 128 bits, of r1 in the high ones.
      const __m256i both = avx512vnni::unpack_scales(w[r0][b].scales, w[r1][b].scales);
      for (int h = 0; h < 2; ++h) {
        const int r = h == 0 ? r0 : r1;
        const __m128i bytes = h == 0 ? _mm256_castsi256_si128(both) : _mm256_extracti128_si256(both, 1);
        const __m512i words = _mm512_cvtepu8_epi16(_mm256_zextsi128_si256(bytes));  // scales 0..7, mins 0..7
        _mm_store_si128(reinterpret_cast<__m128i*>(s.min_pairs[r]), _mm512_extracti32x4_epi32(words, 1));
        const __m512i hi = _mm512_permutexvar_epi16(factor_words, _mm512_srli_epi16(words, 3));
        const __m512i lo = _mm512_permutexvar_epi16(factor_words, _mm512_and_si512(words, _mm512_set1_epi16(7)));
        const Block& block = w[r][b];
        const __m512i qs0 = load512(block.qs), qs1 = load512(block.qs + 64);
        for (int k = 0; k < 4; ++k) {
          const __m512i q = run_values(block, qs0, qs1, k);
          store512(s.hi[k][r], _mm512_mullo_epi16(q, hi));
          store512(s.lo[k][r], _mm512_mullo_epi16(q, lo));
        }
      }
    }
    avx512vnni::store_d_dmin(w, b, s.d, s.dmin);
  }

  // One super-block of the strip against the pass's n_groups token groups `a`: in pairs,
  // then the last one alone.
  static void multiply_groups(const WeightTiles& s, const ActivationTiles* a, int64_t n_groups, Accumulators* acc) {
    int64_t g = 0;
    for (; g + 1 < n_groups; g += 2) multiply_pair(s, a[g], a[g + 1], acc[g], acc[g + 1]);
    if (g < n_groups) multiply_one(s, a[g], acc[g]);
  }

  // One super-block of the strip against token groups g and g + 1 (tiles: C hi / lo of
  // g in tmm0 / tmm1, of g + 1 in tmm5 / tmm6; A hi / lo in tmm2 / tmm3; B of g in tmm4,
  // of g + 1 in tmm7): four chains of products in flight, each A tile loaded once for
  // both groups.
  static void multiply_pair(const WeightTiles& s, const ActivationTiles& a0, const ActivationTiles& a1,
                            Accumulators& acc0, Accumulators& acc1) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(5);
    _tile_zero(6);
    for (int k = 0; k < 4; ++k) {
      _tile_loadd(2, s.hi[k], 64);
      _tile_loadd(4, a0.q[k], 64);
      _tile_loadd(7, a1.q[k], 64);
      _tile_dpbusd(0, 2, 4);
      _tile_dpbusd(5, 2, 7);
      _tile_loadd(3, s.lo[k], 64);
      _tile_dpbusd(1, 3, 4);
      _tile_dpbusd(6, 3, 7);
    }
    alignas(64) int32_t c[4][kStrip16Rows][kTileTokens];  // hi, lo of g; hi, lo of g + 1
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    _tile_stored(5, c[2], 64);
    _tile_stored(6, c[3], 64);
    add_products(s, a0, c[0], c[1], acc0);
    add_products(s, a1, c[2], c[3], acc1);
  }

  // One super-block of the strip against one group of 16 tokens.
  static void multiply_one(const WeightTiles& s, const ActivationTiles& a, Accumulators& acc) {
    _tile_zero(0);
    _tile_zero(1);
    for (int k = 0; k < 4; ++k) {
      _tile_loadd(4, a.q[k], 64);
      _tile_loadd(2, s.hi[k], 64);
      _tile_dpbusd(0, 2, 4);
      _tile_loadd(3, s.lo[k], 64);
      _tile_dpbusd(1, 3, 4);
    }
    alignas(64) int32_t c[2][kStrip16Rows][kTileTokens];
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    add_products(s, a, c[0], c[1], acc);
  }

  // The super-block's f32 steps, from its C tiles (rows x tokens, int32).
  static void add_products(const WeightTiles& s, const ActivationTiles& a, const int32_t (*c_hi)[kTileTokens],
                           const int32_t (*c_lo)[kTileTokens], Accumulators& acc) {
    const __m512 ad = _mm512_load_ps(a.d);
    __m512i bsums[4];
    for (int p = 0; p < 4; ++p) bsums[p] = _mm512_load_si512(a.bsum_pairs[p]);
    for (int r = 0; r < kStrip16Rows; ++r) {
      const __m512i sum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c_hi[r]), 3), _mm512_load_si512(c_lo[r]));
      __m512i min_dot = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) min_dot = _mm512_dpwssd_epi32(min_dot, bsums[p], _mm512_set1_epi32(s.min_pairs[r][p]));
      acc.sum[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(_mm512_set1_ps(s.d[r]), ad), acc.sum[r]);
      acc.min[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min_dot), _mm512_mul_ps(_mm512_set1_ps(s.dmin[r]), ad), acc.min[r]);
    }
  }
};

}  // namespace

void tile_q4_K(const TileJob& job) { run_tiles<TileFormat<avx512vnni::Q4_KValues>>(job, avx512vnni::gemv_q4_K); }
void tile_q5_K(const TileJob& job) { run_tiles<TileFormat<avx512vnni::Q5_KValues>>(job, avx512vnni::gemv_q5_K); }

size_t activation_tiles_q8_K(int64_t n_in, int64_t n_tokens) {
  return static_cast<size_t>((n_tokens + kTileTokens - 1) / kTileTokens) * static_cast<size_t>(n_in / kQK_K) *
         sizeof(ActivationTiles);
}

void prepare_activations_q8_K(const TileJob& job, int64_t first_group, int64_t end_group, std::byte* out) {
  const int64_t n_blocks = job.n_in / kQK_K, n_groups = (job.n_cols + kTileTokens - 1) / kTileTokens;
  auto* tiles = reinterpret_cast<ActivationTiles*>(out);
  for (int64_t g = first_group; g < end_group; ++g) {
    const BlockQ8_K* a[kTileTokens];
    int n = 0;
    for (; n < kTileTokens && g * kTileTokens + n < job.n_cols; ++n) {
      a[n] = avx2::activation_row<BlockQ8_K>(job, g * kTileTokens + n);
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      ActivationTiles& s = tiles[b * n_groups + g];
      for (int k = 0; k < 4; ++k) {
        __m512i lines[kTileTokens];
        for (int t = 0; t < kTileTokens; ++t) lines[t] = t < n ? run_dwords(a[t][b].qs, k) : _mm512_setzero_si512();
        transpose16x16(lines, lines);
        for (int i = 0; i < 16; ++i) store512(s.q[k][i], lines[i]);
      }
      for (int t = 0; t < kTileTokens; ++t) {
        s.d[t] = t < n ? a[t][b].d : 0.0f;
        for (int p = 0; p < 4; ++p) {
          const int16_t* bs = t < n ? a[t][b].bsums + 4 * p : nullptr;
          const uint32_t even = bs ? static_cast<uint16_t>(bs[0] + bs[1]) : 0, odd = bs ? static_cast<uint16_t>(bs[2] + bs[3]) : 0;
          s.bsum_pairs[p][t] = static_cast<int32_t>(even | (odd << 16));
        }
      }
    }
  }
}

}  // namespace pagoda::backend::cpu::amx
