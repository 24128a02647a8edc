// Strip kernels of IQ4_XS (256-value super-blocks of codebook values, a 6-bit scale per 32)
// against Q8_K activations, 8 rows per strip; their arithmetic: matmul_strip_iq4xs.h.
//
// The values are signed (-127..113) and maddubs wants its first operand unsigned: it takes
// their magnitudes, and their signs go onto the activations (vpsignb; no codebook value is
// zero). A pair of products then stays within int16 (2 x 127 x 128), and each pair sum is
// multiplied by its sub-block's scale as it is widened (madd), exact in int32.

#include <cstddef>
#include <cstring>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "backend/cpu/matmul/matmul_strip_iq4xs.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

using quant::BlockIQ4_XS;
using quant::BlockQ8_K;
using quant::kQK_K;

// One super-block of 8 rows.
struct StripIQ4_XS {
  int8_t qs[8][8][32];    // [sub-block][chunk of 4 values][row x 4]: codebook values
  int16_t scales[8][16];  // [sub-block]: row r's ls - 32 in int16 lanes 2r and 2r + 1
  float d[kStripRows];
};

// ls - 32 of each sub-block in both int16 halves of its int32 lane.
inline __m256i scale_pairs(const BlockIQ4_XS& w) {
  const __m256i scales = iq4_xs_scales(w);
  return _mm256_or_si256(_mm256_and_si256(scales, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(scales, 16));
}

// Sub-block s's 32 codebook values in order (its 16 bytes: low nibbles values 0..15,
// high nibbles 16..31).
inline __m256i sub_block_values(const BlockIQ4_XS& w, int s) {
  return _mm256_shuffle_epi8(iq4_codebook(), unpack_nibbles(w.qs + 16 * s));
}

// The integer products of 32 values with 32 activation bytes, pairs summed in int16 and
// then times `scale` (int16 pairs) into 8 int32 lanes.
inline __m256i scaled_products(__m256i values, __m256i activations, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(values), _mm256_sign_epi8(activations, values)), scale);
}

struct IQ4_XSFormat {
  using Strip = StripIQ4_XS;

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    const BlockIQ4_XS* w[kStripRows] = {};
    for (int r = 0; r < n_rows; ++r) w[r] = weight_row<BlockIQ4_XS>(job, row + r);
    for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
      Strip& s = strip[b];
      for (int r = 0; r < kStripRows; ++r) {
        alignas(32) int32_t scales[8] = {};
        if (r < n_rows) _mm256_store_si256(reinterpret_cast<__m256i*>(scales), iq4_xs_scales(w[r][b]));
        for (int j = 0; j < 8; ++j) s.scales[j][2 * r] = s.scales[j][2 * r + 1] = static_cast<int16_t>(scales[j]);
        s.d[r] = r < n_rows ? half_to_float(w[r][b].d) : 0.0f;
      }
      for (int sub = 0; sub < 8; ++sub) {
        __m256i rows[kStripRows], chunks[8];
        for (int r = 0; r < kStripRows; ++r) rows[r] = r < n_rows ? sub_block_values(w[r][b], sub) : _mm256_setzero_si256();
        interleave_rows(rows, chunks);
        for (int k = 0; k < 8; ++k) store256(s.qs[sub][k], chunks[k]);
      }
    }
  }

  // One token, the blocks as stored, rows one after the other (see gemv_sums): per row and
  // super-block 8 int32 partial sums of the total, then the f32 steps for the 8 rows at once.
  static __m256 gemv(const TileJob& job, int64_t row, int n_rows, int64_t col) {
    const BlockIQ4_XS* w[kStripRows];
    strip_rows(job, row, n_rows, w);
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    const int64_t n_blocks = job.n_in / kQK_K;
    __m256i* sums = gemv_sums(job);  // [n_blocks][8]
    for (int r = 0; r < kStripRows; ++r) {
      for (int64_t b = 0; b < n_blocks; ++b) {
        prefetch_ahead(w[r][b].qs);
        prefetch_ahead(w[r][b].qs + 64);
        prefetch_ahead(w[r][b].qs + 127);
        const __m256i scales = scale_pairs(w[r][b]);
        __m256i sum = _mm256_setzero_si256();
        for (int sub = 0; sub < 8; ++sub) {
          const __m256i scale = _mm256_permutevar8x32_epi32(scales, _mm256_set1_epi32(sub));
          sum = _mm256_add_epi32(sum, scaled_products(sub_block_values(w[r][b], sub), load256(a[b].qs + 32 * sub), scale));
        }
        sums[kStripRows * b + r] = sum;
      }
    }
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const __m256 d = _mm256_mul_ps(strip_halves(w, b, offsetof(BlockIQ4_XS, d)), _mm256_set1_ps(a[b].d));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row_totals(sums + kStripRows * b)), d, acc);
    }
    return acc;
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
      for (int sub = 0; sub < 8; ++sub) {
        const __m256i scale = load256(s.scales[sub]);
        #pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          const __m256i values = load256(s.qs[sub][k]);
          for (int j = 0; j < C; ++j) {
            sum[j] = _mm256_add_epi32(sum[j], scaled_products(values, broadcast4(a[j][b].qs + 32 * sub + 4 * k), scale));
          }
        }
      }
      for (int j = 0; j < C; ++j) {
        const __m256 d = _mm256_mul_ps(_mm256_loadu_ps(s.d), _mm256_set1_ps(a[j][b].d));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), d, acc[j]);
      }
    }
  }
};

}  // namespace

void tile_iq4_xs(const TileJob& job) { run_strips<IQ4_XSFormat>(job); }

}  // namespace pagoda::backend::cpu::avx2
