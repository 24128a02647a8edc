// AVX-512 VNNI kernels of IQ4_XS against Q8_K activations: the 16-row strips and their kept
// copy, with the AVX2 kernels' arithmetic (matmul_strip_iq4xs.h) and so their bits.
//
// vpdpbusd wants its first operand unsigned: the codebook is looked up with 128 added
// (1..241), which sums each sub-block's dot with 128 times the token's sum over the
// sub-block (Q8_K's bsums) too; that share comes off each sub-block's dot before its
// scale multiplies it (an integer subtraction, exact: the multiply ports, which bound
// these kernels, are spared the share's own products).
// One layout serves the scratch strips and the kept copy: each super-block of 16 rows
// with its packed bytes moved into place, the nibbles looked up as they are multiplied
// (once per group of tokens), the scales as bytes, d as f32: 2240 bytes against 2176 as
// stored.

#include <cstddef>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "backend/cpu/matmul/matmul_strip_iq4xs.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockIQ4_XS;
using quant::BlockQ8_K;
using quant::kQK_K;

struct alignas(64) PackedStripIQ4_XS {
  uint8_t qs[4][8][64];  // [pair p][chunk k]: bytes 32p + 4k.. of row r's qs in lane r (sub-block
                         // 2p + k / 4: values 4 (k % 4).. in the low nibbles, 16 + 4 (k % 4).. in the high)
  int8_t scales[8][16];  // [sub-block][row]: ls - 32
  float d[kStrip16Rows];
};
static_assert(sizeof(PackedStripIQ4_XS) == 2240);

// The codebook plus 128, unsigned, in every 128-bit lane.
inline __m512i unsigned_codebook() {
  return _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues))),
                         _mm512_set1_epi8(-128));
}

struct PackedIQ4_XS16 {
  using Strip = PackedStripIQ4_XS;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_strip_block<BlockIQ4_XS>(job, row, n_rows, strip_length(job.n_in), [&](const BlockIQ4_XS* const* w, int64_t b) {
      Strip& s = strip[b];
      for (int p = 0; p < 4; ++p) move_into_place(w, b, offsetof(BlockIQ4_XS, qs) + 32 * p, s.qs[p]);
      __m512i pairs[8], scales[8];  // [row pair]: 8 scales of each row, int32
      for (int i = 0; i < 8; ++i) {
        pairs[i] = _mm512_inserti64x4(_mm512_castsi256_si512(avx2::iq4_xs_scales(w[paired_row(i)][b])),
                                      avx2::iq4_xs_scales(w[paired_row(i) + 4][b]), 1);
      }
      transpose_rows16(pairs, scales);
      for (int j = 0; j < 8; ++j) _mm_store_si128(reinterpret_cast<__m128i*>(s.scales[j]), _mm512_cvtepi32_epi8(scales[j]));
      for (int h = 0; h < 2; ++h) {
        _mm256_store_ps(s.d + 8 * h, avx2::strip_halves(w + 8 * h, b, offsetof(BlockIQ4_XS, d)));
      }
    });
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    const __m512i codebook = unsigned_codebook(), low4 = _mm512_set1_epi8(0x0f);
    const BlockQ8_K* a[C];
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<BlockQ8_K>(job, col + j);
      acc[j] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      const Strip& s = strip[b];
      prefetch_strip_block<Strip>(job, ahead, b);
      __m512i total[C];
      alignas(32) int32_t offsets[C][8];  // [token][sub-block]: 128 x the token's sum over the sub-block
      for (int j = 0; j < C; ++j) {
        total[j] = _mm512_setzero_si512();
        _mm256_store_si256(reinterpret_cast<__m256i*>(offsets[j]),
                           _mm256_madd_epi16(avx2::load256(a[j][b].bsums), _mm256_set1_epi16(128)));
      }
      for (int sub = 0; sub < 8; ++sub) {
        __m512i dot[C];
        for (int j = 0; j < C; ++j) dot[j] = _mm512_setzero_si512();
        #pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m512i packed = load512(s.qs[sub / 2][4 * (sub % 2) + k]);
          const __m512i first = _mm512_shuffle_epi8(codebook, _mm512_and_si512(packed, low4));
          const __m512i second = _mm512_shuffle_epi8(codebook, _mm512_and_si512(_mm512_srli_epi16(packed, 4), low4));
          #pragma GCC unroll 8
          for (int j = 0; j < C; ++j) {
            dot[j] = dpbusd_broadcast(dot[j], first, a[j][b].qs + 32 * sub + 4 * k);
            dot[j] = dpbusd_broadcast(dot[j], second, a[j][b].qs + 32 * sub + 16 + 4 * k);
          }
        }
        const __m512i scale = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s.scales[sub])));
        #pragma GCC unroll 8
        for (int j = 0; j < C; ++j) {
          const __m512i exact = _mm512_sub_epi32(dot[j], _mm512_set1_epi32(offsets[j][sub]));
          total[j] = _mm512_add_epi32(total[j], _mm512_mullo_epi32(exact, scale));
        }
      }
      const __m512 d = _mm512_load_ps(s.d);
      #pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[j]), _mm512_mul_ps(d, _mm512_set1_ps(a[j][b].d)), acc[j]);
      }
    }
  }
};

}  // namespace

// Single tokens read the kept copy where there is one; without it they take the AVX2
// kernel (the same bits), which streams the rows as stored as fast as a VNNI one did.
void tile_iq4_xs(const TileJob& job) { run_strips16<PackedIQ4_XS16>(job, avx2::tile_iq4_xs); }
size_t repack_iq4_xs(const TileJob& job, std::byte* out) { return repack_strips16<PackedIQ4_XS16>(job, out); }

}  // namespace pagoda::backend::cpu::avx512vnni
