#pragma once
// The AVX-512 float gemm's blocks (see matmul_float.h), for the files that instantiate
// them with a type's policy: matmul_float_avx512.cpp and matmul_float_avx512bf16.cpp.
// Each output's 16-lane accumulator is one 512-bit register, lane l fed by the policy's
// fuse from each chunk of the row, then the lanes reduced as the reference's AVX-512
// horizontal sum reduces them. 4 weight rows x the policy's kBlockCols tokens per block
// (24 accumulators at 6), each weight chunk loaded once for the block's tokens, each
// activation chunk once for its four rows; a single token's rows one after another.
// Internal linkage (an anonymous namespace): each file keeps its own encoding.
//
// A policy Values has: Value and Activation (a weight's and an activation's element type),
// kChunk (values a step reads of each row), kBlockCols (tokens per block: at most 6, fewer
// where a chunk takes two registers, or the accumulators spill), WeightChunk /
// ActivationChunk with load_weights / load_activations (kChunk values from a pointer), and
// fuse(weights, activations, acc) -> acc.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul/matmul_float.h"
#include "backend/cpu/matmul/matmul_float_lanes.h"

// GCC 12 warns that the "undefined" source vectors of _mm512_cvtph_ps and
// _mm512_extractf32x8_ps may be used uninitialized (its header initializes them from
// themselves, on purpose); they are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagoda::backend::cpu {
namespace {

constexpr int kAvx512BlockRows = 4;
// Tiles of at most this many tokens read their rows once, as a stream.
constexpr int64_t kAvx512StreamTokens = 4;

// Outputs of weight rows [row, row + R) x tokens [col, col + C) of the tile.
template <class Values, int R, int C>
void gemm_block_avx512(const TileJob& job, int64_t row, int64_t col) {
  const BlockOperands<typename Values::Value, typename Values::Activation, R, C> in(job, row, col);
  const auto& w = in.w;
  const auto& a = in.a;
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  // Few tokens: the rows stream from memory, asked for ahead as the AVX2 kernel asks.
  const bool stream = job.n_cols <= kAvx512StreamTokens;
  constexpr int64_t kValuesPerLine = 64 / static_cast<int64_t>(sizeof(typename Values::Value));
  for (int64_t i = 0; i < job.n_in; i += Values::kChunk) {
    if (stream && i % kValuesPerLine == 0) {
      for (int r = 0; r < R; ++r) {
        const char* p = reinterpret_cast<const char*>(w[r] + i);
        _mm_prefetch(p + kRowPrefetchBytes, _MM_HINT_T0);
        _mm_prefetch(p + kL2RowPrefetchBytes, _MM_HINT_T1);
      }
    }
    typename Values::ActivationChunk x[C];
    for (int c = 0; c < C; ++c) x[c] = Values::load_activations(a[c] + i);
    for (int r = 0; r < R; ++r) {
      const typename Values::WeightChunk v = Values::load_weights(w[r] + i);
      for (int c = 0; c < C; ++c) acc[r][c] = Values::fuse(v, x[c], acc[r][c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* y = job.y + static_cast<size_t>(col + c) * job.y_stride + row;
    for (int r = 0; r < R; ++r) {
      y[r] = reduce_lanes16(_mm512_castps512_ps256(acc[r][c]), _mm512_extractf32x8_ps(acc[r][c], 1));
    }
  }
}

// Every token of the tile against weight rows [row, row + R): the rows' chunks stay in
// L1 while the tokens pass over them.
template <class Values, int R>
void gemm_rows_avx512(const TileJob& job, int64_t row) {
  int64_t col = 0;
  for (; col + Values::kBlockCols <= job.n_cols; col += Values::kBlockCols) {
    gemm_block_avx512<Values, R, Values::kBlockCols>(job, row, col);
  }
  static_assert(Values::kBlockCols <= 6);
  switch (job.n_cols - col) {
    case 5: gemm_block_avx512<Values, R, 5>(job, row, col); break;
    case 4: gemm_block_avx512<Values, R, 4>(job, row, col); break;
    case 3: gemm_block_avx512<Values, R, 3>(job, row, col); break;
    case 2: gemm_block_avx512<Values, R, 2>(job, row, col); break;
    case 1: gemm_block_avx512<Values, R, 1>(job, row, col); break;
    default: break;
  }
}

// The whole tile: job.n_rows x job.n_cols outputs.
// A single token reads its rows one after another: one stream from memory, which the
// prefetches and the hardware keep up with better than with rows read side by side.
template <class Values>
void gemm_tile_avx512(const TileJob& job) {
  int64_t row = 0;
  if (job.n_cols > 1) {
    for (; row + kAvx512BlockRows <= job.n_rows; row += kAvx512BlockRows) {
      gemm_rows_avx512<Values, kAvx512BlockRows>(job, row);
    }
  }
  for (; row < job.n_rows; ++row) gemm_rows_avx512<Values, 1>(job, row);
}

}  // namespace
}  // namespace pagoda::backend::cpu
