#pragma once
// Shared pieces of the AMX strip kernels of the k-quants (matmul_strips_k_amx.cpp,
// matmul_strips_q6k_amx.cpp); include from *_amx.cpp files only. Everything here has
// internal linkage (see matmul_strip_avx512.h).
//
// Activations are the B operand, Q8_K rows laid out once per matmul for all rows
// (prepare_activations_q8_K: ActivationTiles); weights are the A operand, each row's own
// bytes; C is then 16 rows x 16 tokens, and the f32 accumulators hold a row's 16 tokens,
// transposed once per strip at the end. A super-block's 256 values go through the tiles
// as 4 runs of 64 (K), in the order of run_dwords, weights and activations alike.

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::amx {
namespace {

using avx512vnni::kStrip16Rows;
using quant::kQK_K;

// Tokens per B and C tile.
constexpr int kTileTokens = static_cast<int>(kActivationTileTokens);

// One super-block of 16 tokens' activations as B tiles. prepare_activations_q8_K lays
// them out [super-block][group of 16 tokens], so that a strip's pass over its tokens
// reads one super-block's groups one after another.
struct alignas(64) ActivationTiles {
  int8_t q[4][16][64];  // [run k][line i: the run's values 4 i .. 4 i + 3 (run_dwords)][token x 4]
  // [sub-block pair p][token]: the sums of sub-blocks 2 p and 2 p + 1 (32 quants each)
  // in the low and high 16 bits, against a row's minimums pair (vpdpwssd; Q4_K and Q5_K,
  // Q6_K has no minimums).
  int32_t bsum_pairs[4][kTileTokens];
  float d[kTileTokens];  // 0 for tokens past the last
};
static_assert(sizeof(ActivationTiles) % 64 == 0);

// 16 dwords of run k from the 256 values of a super-block in order (q0: values 0..63,
// q1: 64..127, q2, q3): dword i holds values 4 i .. 4 i + 3 of the run, those of dword
// 8 sub(i) + 2 k + i % 2 of the super-block, sub(i) = 2 (i / 2) for i < 8 (sub-blocks
// 0, 2, 4, 6), 2 ((i - 8) / 2) + 1 after. So a run holds values 8 k .. 8 k + 7 of each
// sub-block of 32, of sub-blocks 0, 2, 4, 6, 1, 3, 5, 7 in that order.
inline __m512i run_dwords(__m512i q0, __m512i q1, __m512i q2, __m512i q3, int k) {
  // (8 sub(i) + i % 2) mod 32; lines of sub-blocks 4..7 (mask 0xf0f0) from q2, q3.
  const __m512i index = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 16, 17, 0, 1, 16, 17, 8, 9, 24, 25, 8, 9, 24, 25),
                                         _mm512_set1_epi32(2 * k));
  return _mm512_mask_blend_epi32(0xf0f0, _mm512_permutex2var_epi32(q0, index, q1), _mm512_permutex2var_epi32(q2, index, q3));
}
inline __m512i run_dwords(const int8_t* qs, int k) {
  return run_dwords(avx512vnni::load512(qs), avx512vnni::load512(qs + 64), avx512vnni::load512(qs + 128),
                    avx512vnni::load512(qs + 192), k);
}

// A 16 x 16 transpose of dwords: out[k] lane r = in[r] lane k (in and out may alias).
inline void transpose16x16(const __m512i in[16], __m512i out[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {  // pairs of rows: dwords interleaved
    t[i] = _mm512_unpacklo_epi32(in[i], in[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(in[i], in[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // quads of rows: qwords interleaved
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // u[4 q + c], 128-bit lane l: column 4 l + c of rows 4 q .. 4 q + 3.
  for (int c = 0; c < 4; ++c) {
    const __m512i a = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i b = _mm512_shuffle_i32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512i e = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i f = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    t[c] = _mm512_shuffle_i32x4(a, e, _MM_SHUFFLE(2, 0, 2, 0));
    t[4 + c] = _mm512_shuffle_i32x4(b, f, _MM_SHUFFLE(2, 0, 2, 0));
    t[8 + c] = _mm512_shuffle_i32x4(a, e, _MM_SHUFFLE(3, 1, 3, 1));
    t[12 + c] = _mm512_shuffle_i32x4(b, f, _MM_SHUFFLE(3, 1, 3, 1));
  }
  for (int j = 0; j < 16; ++j) out[j] = t[j];
}

// Token groups a strip's super-blocks pass over before the next strip: each super-block's
// A tiles are prepared once per pass, so the more the better, as long as the pass's
// activations stay in L2 while every strip of the tile passes over them.
constexpr int64_t kPassGroups = 16;
constexpr size_t kPassActivationBytes = 1536 * 1024;

// The f32 sums of 16 rows x 16 tokens (lane t of row r: token t), in the VNNI strips'
// order: with kHasMin (Q4_K, Q5_K) the scaled sums and the minimums' share apart,
// subtracted at the end.
template <bool kHasMin>
struct Accumulators {
  __m512 sum[kStrip16Rows];
  __m512 min[kHasMin ? kStrip16Rows : 1];
  void clear() {
    for (int r = 0; r < kStrip16Rows; ++r) {
      sum[r] = _mm512_setzero_ps();
      if constexpr (kHasMin) min[r] = _mm512_setzero_ps();
    }
  }
  // Token t's 16 row results to job.y, for the tokens of the group before job.n_cols.
  void store(const TileJob& job, int64_t row, int n_rows, int64_t col) const {
    __m512i rows[kStrip16Rows];
    for (int r = 0; r < kStrip16Rows; ++r) {
      rows[r] = _mm512_castps_si512(kHasMin ? _mm512_sub_ps(sum[r], min[r]) : sum[r]);
    }
    transpose16x16(rows, rows);
    const int n = static_cast<int>(std::min<int64_t>(job.n_cols - col, kTileTokens));
    for (int t = 0; t < n; ++t) avx512vnni::store_strip16(job, row, col + t, n_rows, _mm512_castsi512_ps(rows[t]));
  }
};

// ldtilecfg's 64-byte operand (palette 1): all eight tiles of 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};
static_assert(sizeof(TileConfig) == 64);

// The strip of 16 rows from `row` (n_rows real) against the prepared activations of
// tokens [first, first + n_groups * 16) of the job; writes the results of those before
// job.n_cols. Each super-block's A tiles are prepared into L1 (Format::prepare_block into
// a Format::WeightTiles) and serve every token group of the pass
// (Format::multiply_groups) before the next super-block's; the f32 accumulators wait in
// `acc`.
template <class Format>
void run_strip(const TileJob& job, int64_t row, int n_rows, int64_t first, int64_t n_groups,
               typename Format::Accumulators* acc) {
  using Block = typename Format::Block;
  const Block* w[kStrip16Rows];
  avx512vnni::strip16_rows(job, row, n_rows, w);
  const int64_t n_blocks = job.n_in / kQK_K;
  avx512vnni::RepackPrefetch<Block> prefetch(job, row, n_blocks);
  // [super-block][group]: a super-block's groups one after another
  const int64_t all_groups = (job.n_cols + kTileTokens - 1) / kTileTokens;
  const auto* act = reinterpret_cast<const ActivationTiles*>(job.a_tiles) + first / kTileTokens;
  for (int64_t g = 0; g < n_groups; ++g) acc[g].clear();
  typename Format::WeightTiles s;
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch(b, w, n_rows);
    Format::prepare_block(w, b, s);
    Format::multiply_groups(s, act + b * all_groups, n_groups, acc);
  }
  for (int64_t g = 0; g < n_groups; ++g) acc[g].store(job, row, n_rows, first + g * kTileTokens);
}

// Runs a Format over the tile, strip after strip (run_strip), in passes over the token
// groups whose activations stay in L2. Tiles of fewer than 4 tokens, or whose
// activations were not laid out, run `single_tokens`.
template <class Format>
void run_tiles(const TileJob& job, void (*single_tokens)(const TileJob&)) {
  if (job.n_cols < avx512vnni::kMinRepackTokens || job.a_tiles == nullptr) {
    single_tokens(job);
    return;
  }
  static const TileConfig config;
  _tile_loadconfig(&config);
  typename Format::Accumulators acc[kPassGroups];
  const size_t group_bytes = static_cast<size_t>(job.n_in / kQK_K) * sizeof(ActivationTiles);
  const int64_t pass_groups = std::clamp<int64_t>(static_cast<int64_t>(kPassActivationBytes / group_bytes), 1, kPassGroups);
  for (int64_t first = 0; first < job.n_cols; first += pass_groups * kTileTokens) {
    const int64_t n_groups = std::min<int64_t>(pass_groups, (job.n_cols - first + kTileTokens - 1) / kTileTokens);
    for (int64_t row = 0; row < job.n_rows; row += kStrip16Rows) {
      const int n_rows = static_cast<int>(std::min<int64_t>(job.n_rows - row, kStrip16Rows));
      run_strip<Format>(job, row, n_rows, first, n_groups, acc);
    }
  }
  _tile_release();
}

}  // namespace
}  // namespace pagoda::backend::cpu::amx
