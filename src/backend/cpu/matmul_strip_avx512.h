#pragma once
// Shared pieces of the AVX-512 VNNI tile kernels; include from *_avx512vnni.cpp files only.
// Everything here has internal linkage (an anonymous namespace), so no AVX-512-encoded copy
// of a function can stand in for a baseline one at link time.
//
// The same plan as the AVX2 strips (matmul_strip_avx2.h), twice as wide: a strip is 16
// weight rows, repacked so that each 64-byte vector holds 4 consecutive values of each
// of the 16 rows (row r in 32-bit lane r); vpdpbusd then adds the 4 products of every lane
// into int32 at once (AVX2 needs maddubs, an int16 add and a madd), the activation bytes
// coming from a 4-byte broadcast. Per block, row and token the kernels form the same
// integer sums as the AVX2 ones and take the same f32 steps, lane by lane, so that their
// results are the same bits: a token's output does not depend on which kernel ran it.

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul_strip_avx2.h"
#include "backend/cpu/matmul_tiles.h"

// GCC 12 warns that the "undefined" source vector of _mm512_cvtepi32_ps may be used
// uninitialized (its header initializes it from itself, on purpose); it is never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using avx2::activation_row;
using avx2::weight_row;

constexpr int kStrip16Rows = 16;
// Tokens per micro-kernel call: kStripTokens int32 sums and f32 accumulators in registers,
// each weight vector loaded once for all of them.
constexpr int kStripTokens = 8;
// Fewer tokens than this take the AVX2 kernel's single-token path (the weights as
// stored, no repacking), which gives the same bits.
constexpr int kMinRepackTokens = 4;

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
inline void store512(void* p, __m512i v) { _mm512_storeu_si512(p, v); }

// 4 bytes at p, in every 32-bit lane (the compiler folds it into vpdpbusd's operand).
inline __m512i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// rows[r] holds 32 values of row r (r < 16); afterwards out[k] holds values 4k..4k+3 of
// row r in 32-bit lane r: the AVX2 8 x 8 transpose for each half, side by side.
inline void interleave_rows16(const __m256i rows[16], __m512i out[8]) {
  __m256i low[8], high[8];
  avx2::interleave_rows(rows, low);
  avx2::interleave_rows(rows + 8, high);
  for (int k = 0; k < 8; ++k) out[k] = _mm512_inserti64x4(_mm512_castsi256_si512(low[k]), high[k], 1);
}

// Writes the 16 row results of token `col` (the first `n_rows` of them).
inline void store_strip16(const TileJob& job, int64_t row, int64_t col, int n_rows, __m512 v) {
  float* y = job.y + static_cast<size_t>(col) * job.y_stride + static_cast<size_t>(row);
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n_rows) - 1), v);
}

// Runs a Format over the tile: Format::Strip is the repacked form of one block (or
// super-block) of 16 rows, Format::repack(job, row, n_rows, strip) fills a strip's blocks
// (rows past n_rows are zero), Format::multiply<C>(job, strip, col, acc) accumulates C
// tokens' results. As avx2::run_strips: every strip is repacked once into scratch, then
// passes over the tokens job.cols_per_pass at a time. `single_tokens` (the AVX2 kernel of
// the same format) runs tiles of fewer than kMinRepackTokens tokens.
template <class Format>
void run_strips16(const TileJob& job, void (*single_tokens)(const TileJob&)) {
  if (job.n_cols < kMinRepackTokens) {
    single_tokens(job);
    return;
  }
  using Strip = typename Format::Strip;
  const auto rows_at = [&](int64_t row) { return static_cast<int>(std::min<int64_t>(job.n_rows - row, kStrip16Rows)); };
  Strip* strips = reinterpret_cast<Strip*>(job.scratch);
  const int64_t strip_length = Format::strip_length(job.n_in);  // Strips per 16 rows
  for (int64_t row = 0; row < job.n_rows; row += kStrip16Rows) {
    Format::repack(job, row, rows_at(row), strips + row / kStrip16Rows * strip_length);
  }
  const int64_t pass = job.cols_per_pass > 0 ? job.cols_per_pass : job.n_cols;
  for (int64_t first = 0; first < job.n_cols; first += pass) {
    const int64_t last = std::min(first + pass, job.n_cols);
    for (int64_t row = 0; row < job.n_rows; row += kStrip16Rows) {
      const Strip* strip = strips + row / kStrip16Rows * strip_length;
      const int n_rows = rows_at(row);
      int64_t col = first;
      for (; col + kStripTokens <= last; col += kStripTokens) {
        __m512 acc[kStripTokens];
        Format::template multiply<kStripTokens>(job, strip, col, acc);
        for (int j = 0; j < kStripTokens; ++j) store_strip16(job, row, col + j, n_rows, acc[j]);
      }
      for (; col + 4 <= last; col += 4) {
        __m512 acc[4];
        Format::template multiply<4>(job, strip, col, acc);
        for (int j = 0; j < 4; ++j) store_strip16(job, row, col + j, n_rows, acc[j]);
      }
      for (; col < last; ++col) {
        __m512 acc[1];
        Format::template multiply<1>(job, strip, col, acc);
        store_strip16(job, row, col, n_rows, acc[0]);
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu::avx512vnni
