// AMX strip kernel of Q6_K against Q8_K activations, for tiles of 4 tokens or more: per
// super-block, row and token the same integer sum as the VNNI strips
// (matmul_strips_groups16_avx512vnni.cpp), formed on the tile unit, then the same f32 step on
// the same values, so the same bits.
//
// A super-block's sum is sum_g scale_g x dot_g(q - 32, a) over its 16 groups of 16
// values, a signed 8-bit scale per row and group. The tile unit adds products along K
// without a stop per group, so the scales go into the weights' bytes, as for Q4_K
// (matmul_strips_k_amx.cpp), here in three digits: scale = 64 d2 + 8 d1 + d0 with every
// digit in [-3, 4] (base 8 with those eight digits writes every integer of [-219, 292]),
// so that (q - 32) x digit lies in [-128, 124] and fits tdpbssd's signed operand, and the
// sum is 64 C2 + 8 C1 + C0 from three K = 256 products, exact in int32. The values' offset
// is in the bytes, so no offset times the activations' sums comes off.
//
// The weights are the A operand (each row's own bytes: its values less 32, in run order,
// times a digit of their group's scale), the activations the B operand, laid out as for
// Q4_K (matmul_strip_amx.h), so that a Q4_K_M model's Q4_K and Q6_K products share them.
// Runs k = 0, 1 hold values of the even groups only (the first half of each sub-block of
// 32), runs 2, 3 those of the odd groups, in the same places: one factor vector per digit
// serves runs 0 and 1, another runs 2 and 3.

#include <immintrin.h>

#include <cstddef>

#include "backend/cpu/matmul/matmul_strip_amx.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::amx {
namespace {

using avx512vnni::load512;
using avx512vnni::store512;
using quant::BlockQ6_K;

// One super-block of 16 rows as A tiles (12 KiB: stays in L1 while every token group of
// the pass meets it).
struct alignas(64) WeightTiles6 {
  int8_t q[4][3][kStrip16Rows][64];  // [run][digit j][row]: (q - 32) x digit j of its group's scale
  float d[kStrip16Rows];
};
static_assert(sizeof(WeightTiles6) % 64 == 0);

// The 256 values of a row's super-block less 32, in order: v[0] holds values 0..63,
// v[1] 64..127, and so on. Value 128 n + 32 m + l (l < 32) has the low (m < 2) or high
// nibble of ql[64 n + 32 (m % 2) + l] and bits 2 m, 2 m + 1 of qh[32 n + l] above it.
inline void row_values(const BlockQ6_K& block, __m512i v[4]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30), offset = _mm512_set1_epi8(32);
  // Per 256-bit half (m even, m odd), the shift that moves qh bits 2 m, 2 m + 1 to bits
  // 4, 5: left by 4 and 2 for m = 0, 1; right by 0 and 2 for m = 2, 3. The bits a 16-bit
  // shift brings in from the neighbouring byte fall outside the mask.
  const __m512i left = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i right = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  for (int n = 0; n < 2; ++n) {
    const __m512i ql = load512(block.ql + 64 * n);
    const __m512i qh = _mm512_broadcast_i64x4(avx2::load256(block.qh + 32 * n));
    const __m512i low = _mm512_and_si512(ql, low4), high = _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4);
    // nibbles | (moved & 0x30), less 32
    v[2 * n] = _mm512_sub_epi8(_mm512_ternarylogic_epi32(low, _mm512_sllv_epi16(qh, left), bits45, 0xf8), offset);
    v[2 * n + 1] = _mm512_sub_epi8(_mm512_ternarylogic_epi32(high, _mm512_srlv_epi16(qh, right), bits45, 0xf8), offset);
  }
}

// The digits of a row's 16 scales, one 16-bit word per group: scale = 64 d[2] + 8 d[1] +
// d[0], each digit in [-3, 4] (digit = ((x + 3) mod 8) - 3, then x = (x - digit) / 8).
inline void scale_digits(const int8_t* scales, __m256i d[3]) {
  const __m256i three = _mm256_set1_epi16(3), seven = _mm256_set1_epi16(7);
  __m256i x = _mm256_cvtepi8_epi16(avx2::load128(scales));
  for (int j = 0; j < 3; ++j) {
    d[j] = _mm256_sub_epi16(_mm256_and_si256(_mm256_add_epi16(x, three), seven), three);
    x = _mm256_srai_epi16(_mm256_sub_epi16(x, d[j]), 3);
  }
}

// v x f, byte by byte, for signed bytes v and 16-bit factors f (both bytes of a word by
// its factor), exact where the products fit a byte. v_high: v with its low bytes 0.
// A 16-bit product gets the low byte right whatever the high one holds; the high byte
// comes right from v_high's product.
inline __m512i times(__m512i v, __m512i v_high, __m512i f) {
  return _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaa, _mm512_mullo_epi16(v, f), _mm512_mullo_epi16(v_high, f));
}

struct Q6_KTileFormat {
  using Block = BlockQ6_K;
  using WeightTiles = WeightTiles6;
  using Accumulators = amx::Accumulators<false>;

  // The A tiles of super-block b of the 16 rows w.
  static void prepare_block(const BlockQ6_K* const* w, int64_t b, WeightTiles6& s) {
    // Word 2 i, 2 i + 1 of a factor vector: the digit of the group dword i of runs 0, 1
    // meets, 2 sub(i) (run_dwords); runs 2, 3 meet group 2 sub(i) + 1.
    const __m512i even_groups = _mm512_set_epi16(14, 14, 14, 14, 10, 10, 10, 10, 6, 6, 6, 6, 2, 2, 2, 2,  //
                                                 12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0);
    const __m512i odd_groups = _mm512_add_epi16(even_groups, _mm512_set1_epi16(1));
    const __m512i high_bytes = _mm512_set1_epi16(static_cast<int16_t>(0xff00));
    for (int r = 0; r < kStrip16Rows; ++r) {
      const BlockQ6_K& block = w[r][b];
      __m256i digits[3];
      scale_digits(block.scales, digits);
      __m512i factors[2][3];  // [runs 0, 1 | runs 2, 3][digit]
      for (int j = 0; j < 3; ++j) {
        factors[0][j] = _mm512_permutexvar_epi16(even_groups, _mm512_castsi256_si512(digits[j]));
        factors[1][j] = _mm512_permutexvar_epi16(odd_groups, _mm512_castsi256_si512(digits[j]));
      }
      __m512i v[4];
      row_values(block, v);
      for (int k = 0; k < 4; ++k) {
        const __m512i run = run_dwords(v[0], v[1], v[2], v[3], k);
        const __m512i run_high = _mm512_and_si512(run, high_bytes);
        for (int j = 0; j < 3; ++j) store512(s.q[k][j][r], times(run, run_high, factors[k / 2][j]));
      }
    }
    for (int h = 0; h < 2; ++h) _mm256_store_ps(s.d + 8 * h, avx2::strip_halves(w + 8 * h, b, offsetof(BlockQ6_K, d)));
  }

  // One super-block of the strip against the pass's n_groups token groups `a`.
  static void multiply_groups(const WeightTiles6& s, const ActivationTiles* a, int64_t n_groups, Accumulators* acc) {
    for (int64_t g = 0; g < n_groups; ++g) multiply(s, a[g], acc[g]);
  }

  // One super-block of the strip against one group of 16 tokens: C of digit j in tmm j,
  // A of digit j in tmm 3 + j, B in tmm 6.
  static void multiply(const WeightTiles6& s, const ActivationTiles& a, Accumulators& acc) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    for (int k = 0; k < 4; ++k) {
      _tile_loadd(6, a.q[k], 64);
      _tile_loadd(3, s.q[k][0], 64);
      _tile_dpbssd(0, 3, 6);
      _tile_loadd(4, s.q[k][1], 64);
      _tile_dpbssd(1, 4, 6);
      _tile_loadd(5, s.q[k][2], 64);
      _tile_dpbssd(2, 5, 6);
    }
    alignas(64) int32_t c[3][kStrip16Rows][kTileTokens];
    _tile_stored(0, c[0], 64);
    _tile_stored(1, c[1], 64);
    _tile_stored(2, c[2], 64);
    const __m512 ad = _mm512_load_ps(a.d);
    for (int r = 0; r < kStrip16Rows; ++r) {
      const __m512i sum = _mm512_add_epi32(
          _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c[2][r]), 6), _mm512_slli_epi32(_mm512_load_si512(c[1][r]), 3)),
          _mm512_load_si512(c[0][r]));
      acc.sum[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(_mm512_set1_ps(s.d[r]), ad), acc.sum[r]);
    }
  }
};

}  // namespace

void tile_q6_K(const TileJob& job) { run_tiles<Q6_KTileFormat>(job, avx512vnni::gemv_q6_K); }

}  // namespace pagoda::backend::cpu::amx
