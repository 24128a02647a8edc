#pragma once
// Shared pieces of the AVX2 tile kernels; include from *_avx2.cpp files (and the
// *_avx512vnni.cpp kernels, which build on them) only. Everything
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

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul/matmul_tiles.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

constexpr int kStripRows = 8;
constexpr int kStripCols = 4;  // tokens per micro-kernel call
// Tokens per call of a Format's multiply_pair, which runs two strips (16 rows) at once:
// each broadcast of activations then feeds two multiplies instead of one (the broadcasts,
// not the multiplies, limit the one-strip kernel on AVX2).
constexpr int kStripPairCols = 2;

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

// Adds b to the running sum a (or, on the first step of a run, starts it with b) and pins
// the result in a register: without the empty asm the compiler re-associates the chain
// of adds into a tree, which needs more registers than there are and spills the products
// to the stack. `first` is known at compile time where the loops are unrolled.
inline void accumulate_epi16(__m256i& a, __m256i b, bool first) {
  a = first ? b : _mm256_add_epi16(a, b);
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

// The same for 4 int32 lanes per row: lane r of the result sums the 4 lanes of p[r].
inline __m256i row_totals(const __m128i p[8]) {
  // Row r beside row r + 4, then two rounds of pairwise sums.
  const __m256i h01 = _mm256_hadd_epi32(_mm256_set_m128i(p[4], p[0]), _mm256_set_m128i(p[5], p[1]));
  const __m256i h23 = _mm256_hadd_epi32(_mm256_set_m128i(p[6], p[2]), _mm256_set_m128i(p[7], p[3]));
  return _mm256_hadd_epi32(h01, h23);
}

// int16 number i (0..7) of each 128-bit half of v, in every int16 of that half.
inline __m256i broadcast_i16(__m256i v, int i) {
  return _mm256_shuffle_epi8(v, _mm256_set1_epi16(static_cast<int16_t>((2 * i + 1) << 8 | 2 * i)));
}

template <typename Block>
const Block* weight_row(const TileJob& job, int64_t row) {
  return reinterpret_cast<const Block*>(job.w + static_cast<size_t>(row) * job.w_stride);
}
template <typename Block>
const Block* activation_row(const TileJob& job, int64_t col) {
  return reinterpret_cast<const Block*>(job.a + static_cast<size_t>(col) * job.a_stride);
}

// The 8 weight rows of a strip from `row`, for kernels that read them as stored: rows
// past n_rows repeat the last real one, so that no load leaves the tensor and no branch
// is needed (their lanes are computed, then never stored).
template <typename Block>
void strip_rows(const TileJob& job, int64_t row, int n_rows, const Block* (&w)[kStripRows]) {
  for (int r = 0; r < kStripRows; ++r) w[r] = weight_row<Block>(job, row + (r < n_rows ? r : n_rows - 1));
}

// The f16 at byte `offset` of block b of each of the 8 rows, as floats (lane r: row r).
template <typename Block>
__m256 strip_halves(const Block* const* w, int64_t b, size_t offset) {
  uint16_t h[kStripRows];
  for (int r = 0; r < kStripRows; ++r) std::memcpy(&h[r], reinterpret_cast<const char*>(&w[r][b]) + offset, 2);
  // Built in registers: a 16-byte load right after eight 2-byte stores would stall.
  return _mm256_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(h[0]), static_cast<int16_t>(h[1]),
                                        static_cast<int16_t>(h[2]), static_cast<int16_t>(h[3]),
                                        static_cast<int16_t>(h[4]), static_cast<int16_t>(h[5]),
                                        static_cast<int16_t>(h[6]), static_cast<int16_t>(h[7])));
}

// The two adjacent f16 at byte `offset` of block b of each of the 8 rows (d and m of
// Q4_1 / Q5_1, d and dmin of the k-quants), as floats (lane r: row r).
template <typename Block>
void strip_half_pairs(const Block* const* w, int64_t b, size_t offset, __m256& first, __m256& second) {
  uint32_t pair[kStripRows];
  for (int r = 0; r < kStripRows; ++r) std::memcpy(&pair[r], reinterpret_cast<const char*>(&w[r][b]) + offset, 4);
  const __m256i v = _mm256_setr_epi32(static_cast<int>(pair[0]), static_cast<int>(pair[1]), static_cast<int>(pair[2]),
                                      static_cast<int>(pair[3]), static_cast<int>(pair[4]), static_cast<int>(pair[5]),
                                      static_cast<int>(pair[6]), static_cast<int>(pair[7]));
  // Per 128-bit half: rows' first halves, then their second halves; then rows 0..7 of
  // each in one 128-bit half.
  const __m256i halves = _mm256_packus_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_srli_epi32(v, 16));
  const __m256i ordered = _mm256_permute4x64_epi64(halves, 0xd8);  // 64-bit groups 0, 2, 1, 3
  first = _mm256_cvtph_ps(_mm256_castsi256_si128(ordered));
  second = _mm256_cvtph_ps(_mm256_extracti128_si256(ordered, 1));
}

// The 32-value block formats decode a strip's 8 rows side by side (their blocks are small:
// partial sums kept per block would cost more than they save): while a strip is
// multiplied, ask for the same bytes of a strip further on, so that their loads overlap
// this arithmetic. The first strip at least kStripPrefetchBytes ahead: the next one when
// rows are long, several on when they are short (with 1B-shaped rows of 2048 Q8_0 values,
// a 17 KiB strip, two strips ahead stream faster than one; long rows do best with the
// next strip).
constexpr size_t kStripPrefetchBytes = 32 * 1024;
// The bytes from a strip of `strip_bytes` to the first strip at least `at_least` on
// (shared with the AVX-512 strips' repacking and kept copies).
inline uintptr_t whole_strips_ahead(size_t strip_bytes, size_t at_least = kStripPrefetchBytes) {
  return (at_least + strip_bytes - 1) / strip_bytes * strip_bytes;
}
inline uintptr_t strip_prefetch_distance(const TileJob& job) { return whole_strips_ahead(kStripRows * job.w_stride); }
// A prefetch never faults, so the address (an integer: it may lie past the tensor) needs
// no check.
inline void prefetch_strip_ahead(uintptr_t distance, const void* p) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + distance), _MM_HINT_T0);
}

// The k-quant gemv kernels (one token, the weights as stored) read a strip's rows one
// after the other, each from start to end, so that the weights stream from memory in
// address order: 8 rows side by side are 8 streams, more than the hardware prefetcher
// follows (reading them in address order sped 1B Q4_K_M generation up by a third). Each row's integer
// partial sums, a vector per super-block, wait in scratch ([n_blocks][8 rows], at most
// 400 bytes per 256 values: within tile_scratch_bytes) for the f32 steps, which then run
// for the 8 rows at once as in multiply, so the results are those of multiply.
inline __m256i* gemv_sums(const TileJob& job) { return reinterpret_cast<__m256i*>(job.scratch); }

// Ask for the weights kRowPrefetchBytes ahead of p (matmul_tiles.h), in the row being
// read or the next one.
inline void prefetch_ahead(const void* p) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + kRowPrefetchBytes), _MM_HINT_T0);
}

// The f32 scales of token `col`'s activation blocks (TileJob::a_scales).
inline const float* activation_scales(const TileJob& job, int64_t col) {
  return job.a_scales + static_cast<size_t>(col) * job.a_scales_stride;
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
// tokens' results. Every strip of the tile is repacked once, into scratch, then passes
// over the tokens job.cols_per_pass at a time (those activations stay in L2 while every
// strip reads them). Fewer than kStripCols tokens (decoding) skip the repacking when the
// Format has gemv(job, row, n_rows, col): the same f32 steps as multiply<1>, reading the
// blocks as stored and summing each row's integer lanes instead.
template <class Format>
void run_strips(const TileJob& job) {
  using Strip = typename Format::Strip;
  constexpr bool kHasGemv = requires(const TileJob& j) { Format::gemv(j, int64_t{0}, 0, int64_t{0}); };
  const auto rows_at = [&](int64_t row) { return static_cast<int>(std::min<int64_t>(job.n_rows - row, kStripRows)); };
  if constexpr (kHasGemv) {
    if (job.n_cols < kStripCols) {
      for (int64_t row = 0; row < job.n_rows; row += kStripRows) {
        for (int64_t col = 0; col < job.n_cols; ++col) store_strip(job, row, col, rows_at(row), Format::gemv(job, row, rows_at(row), col));
      }
      return;
    }
  }
  // Strip s of the tile starts at strips + s * strip_length.
  Strip* strips = reinterpret_cast<Strip*>(job.scratch);
  const int64_t strip_length = static_cast<int64_t>(tile_scratch_bytes(job.n_in) / sizeof(Strip));
  for (int64_t row = 0; row < job.n_rows; row += kStripRows) {
    Format::repack(job, row, rows_at(row), strips + row / kStripRows * strip_length);
  }
  const int64_t pass = job.cols_per_pass > 0 ? job.cols_per_pass : job.n_cols;
  constexpr bool kHasPairs = requires(const TileJob& j, const Strip* s, __m256* acc) {
    Format::template multiply_pair<kStripPairCols>(j, s, s, int64_t{0}, acc);
  };
  for (int64_t first = 0; first < job.n_cols; first += pass) {
    const int64_t last = std::min(first + pass, job.n_cols);
    for (int64_t row = 0; row < job.n_rows; row += kStripRows) {
      const Strip* strip = strips + row / kStripRows * strip_length;
      int64_t col = first;
      if constexpr (kHasPairs) {
        if (row + kStripRows < job.n_rows) {  // two strips: 16 rows against kStripPairCols tokens at once
          const Strip* next = strip + strip_length;
          for (; col + kStripPairCols <= last; col += kStripPairCols) {
            __m256 acc[2 * kStripPairCols];
            Format::template multiply_pair<kStripPairCols>(job, strip, next, col, acc);
            for (int j = 0; j < kStripPairCols; ++j) {
              store_strip(job, row, col + j, kStripRows, acc[j]);
              store_strip(job, row + kStripRows, col + j, rows_at(row + kStripRows), acc[kStripPairCols + j]);
            }
          }
          for (; col < last; ++col) {
            __m256 acc[2];
            Format::template multiply_pair<1>(job, strip, next, col, acc);
            store_strip(job, row, col, kStripRows, acc[0]);
            store_strip(job, row + kStripRows, col, rows_at(row + kStripRows), acc[1]);
          }
          row += kStripRows;
          continue;
        }
      }
      for (; col + kStripCols <= last; col += kStripCols) {
        __m256 acc[kStripCols];
        Format::template multiply<kStripCols>(job, strip, col, acc);
        for (int j = 0; j < kStripCols; ++j) store_strip(job, row, col + j, rows_at(row), acc[j]);
      }
      for (; col < last; ++col) {
        __m256 acc[1];
        Format::template multiply<1>(job, strip, col, acc);
        store_strip(job, row, col, rows_at(row), acc[0]);
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cpu::avx2
