#pragma once
// Shared pieces of the AVX2 tile kernels; include from *_avx2.cpp files only. Everything
// here has internal linkage (an anonymous namespace), so no AVX2-encoded copy of a
// function can stand in for a baseline one at link time.
//
// A tile is computed one strip of 8 weight rows at a time. The strip is first repacked
// into scratch so that each 32-byte vector holds 4 consecutive values of each of the 8
// rows (row r in 32-bit lane r); then a micro-kernel runs it against kStripCols tokens
// at once, broadcasting 4 activation bytes per step, so every vector instruction works
// on 8 rows and the result of 8 rows for a token is one vector: scales are applied once
// per block for 8 rows, and nothing is reduced horizontally.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul_tiles.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

constexpr int kStripRows = 8;
constexpr int kStripCols = 4;  // tokens per micro-kernel call

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline void store256(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// 4 bytes at p, in every 32-bit lane.
inline __m256i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// 32 nibbles of 16 bytes: low nibbles are values 0..15, high nibbles 16..31.
inline __m256i unpack_nibbles(const uint8_t* qs) {
  const __m128i q = load128(qs);
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
}

// Byte i is 0xff where bit i of `bits` is set, else 0.
inline __m256i bytes_from_bits(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// rows[r] holds 32 values of row r; afterwards out[k] holds values 4k..4k+3 of row r in
// lane r (an 8 x 8 transpose of 32-bit groups).
inline void interleave_rows(const __m256i rows[8], __m256i* out) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(rows[2 * i], rows[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(rows[2 * i], rows[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 0..3, then 4..7
    const __m256i* th = t + 4 * h;
    u[4 * h + 0] = _mm256_unpacklo_epi64(th[0], th[2]);
    u[4 * h + 1] = _mm256_unpackhi_epi64(th[0], th[2]);
    u[4 * h + 2] = _mm256_unpacklo_epi64(th[1], th[3]);
    u[4 * h + 3] = _mm256_unpackhi_epi64(th[1], th[3]);
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
    out[k + 4] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
  }
}

// Adds b to the running sum a and pins the result in a register: without the empty asm
// the compiler re-associates the chain of adds into a tree, which needs more registers
// than there are and spills the products to the stack.
inline void accumulate_epi16(__m256i& a, __m256i b) {
  a = _mm256_add_epi16(a, b);
  asm("" : "+x"(a));
}

// Sums of 4 products (u8 x s8) per lane: the madd with ones after maddubs.
inline __m256i quad_sums(__m256i pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }

// Lane r of the result: the sum of the 8 lanes of p[r], exactly (integers).
inline __m256i row_totals(const __m256i p[8]) {
  const __m256i h01 = _mm256_hadd_epi32(p[0], p[1]), h23 = _mm256_hadd_epi32(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi32(p[4], p[5]), h67 = _mm256_hadd_epi32(p[6], p[7]);
  const __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                          _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

template <typename Block>
const Block* weight_row(const TileJob& job, int64_t row) {
  return reinterpret_cast<const Block*>(job.w + static_cast<size_t>(row) * job.w_stride);
}
template <typename Block>
const Block* activation_row(const TileJob& job, int64_t col) {
  return reinterpret_cast<const Block*>(job.a + static_cast<size_t>(col) * job.a_stride);
}

// Writes the 8 row results of token `col` (the first `n_rows` of them).
inline void store_strip(const TileJob& job, int64_t row, int64_t col, int n_rows, __m256 v) {
  float* y = job.y + static_cast<size_t>(col) * job.y_stride + static_cast<size_t>(row);
  if (n_rows == kStripRows) {
    _mm256_storeu_ps(y, v);
  } else {
    alignas(32) float tmp[kStripRows];
    _mm256_store_ps(tmp, v);
    for (int r = 0; r < n_rows; ++r) y[r] = tmp[r];
  }
}

// Runs a Format over the tile: Format::Strip is the repacked form of one block (or
// super-block) of 8 rows, Format::repack(job, row, n_rows, strip) fills a strip's blocks
// (rows past n_rows are zero), Format::multiply<C>(job, strip, col, acc) accumulates C
// tokens' results. Fewer than kStripCols tokens (decoding) skip the repacking when the
// Format has gemv(job, row, n_rows, col): the same f32 steps as multiply<1>, reading the
// blocks as stored and summing each row's integer lanes instead.
template <class Format>
void run_strips(const TileJob& job) {
  using Strip = typename Format::Strip;
  constexpr bool kHasGemv = requires(const TileJob& j) { Format::gemv(j, int64_t{0}, 0, int64_t{0}); };
  Strip* strip = reinterpret_cast<Strip*>(job.scratch);
  for (int64_t row = 0; row < job.n_rows; row += kStripRows) {
    const int n_rows = static_cast<int>(job.n_rows - row < kStripRows ? job.n_rows - row : kStripRows);
    if constexpr (kHasGemv) {
      if (job.n_cols < kStripCols) {
        for (int64_t col = 0; col < job.n_cols; ++col) store_strip(job, row, col, n_rows, Format::gemv(job, row, n_rows, col));
        continue;
      }
    }
    Format::repack(job, row, n_rows, strip);
    int64_t col = 0;
    for (; col + kStripCols <= job.n_cols; col += kStripCols) {
      __m256 acc[kStripCols];
      Format::template multiply<kStripCols>(job, strip, col, acc);
      for (int j = 0; j < kStripCols; ++j) store_strip(job, row, col + j, n_rows, acc[j]);
    }
    for (; col < job.n_cols; ++col) {
      __m256 acc[1];
      Format::template multiply<1>(job, strip, col, acc);
      store_strip(job, row, col, n_rows, acc[0]);
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu::avx2
