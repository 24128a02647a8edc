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
#include <utility>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "core/cpu_features.h"

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
// Fewer tokens than this take the format's single-token kernel (the weights as stored,
// no repacking), which gives the same bits.
constexpr int64_t kMinRepackTokens = kMinStripTokens;

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
inline void store512(void* p, __m512i v) { _mm512_storeu_si512(p, v); }

// 4 bytes at p, in every 32-bit lane (the compiler folds it into vpdpbusd's operand).
inline __m512i broadcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// sum + the products of w's unsigned bytes with the 4 signed bytes at p, in every lane:
// vpdpbusd with its {1to16} memory operand. GCC 12 keeps the broadcast as an instruction
// of its own (_mm512_dpbusd_epi32 with _mm512_set1_epi32 of a load), one per vpdpbusd
// in the strip kernels; folded, the strips run measurably faster.
inline __m512i dpbusd_broadcast(__m512i sum, __m512i w, const void* p) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(w), "m"(*static_cast<const int32_t*>(p)));
  return sum;
}

// The strip's 16 weight rows from `row`, for repacking: rows past n_rows repeat the last
// real one, so that every load stays inside the tensor and needs no branch (their lanes
// are computed, then never stored).
template <typename Block>
void strip16_rows(const TileJob& job, int64_t row, int n_rows, const Block* (&w)[kStrip16Rows]) {
  for (int r = 0; r < kStrip16Rows; ++r) w[r] = weight_row<Block>(job, row + std::min(r, n_rows - 1));
}

// Repacking reads a strip's 16 rows side by side, block b of each in turn: 16 streams
// from DRAM, more than the hardware prefetcher follows. Meanwhile it asks for bytes
// further on. For a tile of few tokens (decoding several sequences) those of the strip
// at least avx2::kStripPrefetchBytes on (the next strip when rows are long, several on
// when they are short), into L2, in address order: a weight panel's rows lie one after
// another, so the strip is one run of bytes, of which each block repacked here asks for
// an equal share of lines (row by row, blocks smaller than a line would ask for each line
// several times: a 20-byte Q4_1 block is a third of one). At 16 tokens a step, waiting on
// the weights had been half of the time of a matmul. A tile of many tokens (a prompt)
// spends its time multiplying, and more so when its rows stay in its panel: block b +
// kRepackAheadBlocks of each row, into L1 (the far prefetch slows prompt processing). A prefetch never faults, so the addresses (integers: they may lie past the
// tensor) need no check.
constexpr int64_t kFarPrefetchTokens = 32;
constexpr int64_t kRepackAheadBlocks = 2;
template <typename Block>
class RepackPrefetch {
 public:
  // For the repacking of the strip of rows [row, row + 16) of the tile, n_blocks blocks
  // (or super-blocks) per row.
  RepackPrefetch(const TileJob& job, int64_t row, int64_t n_blocks) {
    if (job.n_cols > kFarPrefetchTokens) return;
    const size_t strip_bytes = kStrip16Rows * job.w_stride;
    next_line_ = reinterpret_cast<uintptr_t>(job.w + static_cast<size_t>(row) * job.w_stride) +
                 avx2::whole_strips_ahead(strip_bytes);
    const int64_t lines = static_cast<int64_t>((strip_bytes + 63) / 64);
    lines_per_block_ = (lines + n_blocks - 1) / n_blocks;
  }
  // While block b of the `n_rows` rows `w` is repacked.
  void operator()(int64_t b, const Block* const (&w)[kStrip16Rows], int n_rows) {
    if (lines_per_block_ > 0) {
      for (int64_t i = 0; i < lines_per_block_; ++i, next_line_ += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(next_line_), _MM_HINT_T1);
      }
      return;
    }
    for (int r = 0; r < n_rows; ++r) {
      const auto* p = reinterpret_cast<const char*>(&w[r][b + kRepackAheadBlocks]);
      for (size_t at = 0; at < sizeof(Block); at += 64) _mm_prefetch(p + at, _MM_HINT_T0);
      if (sizeof(Block) % 64 != 0) _mm_prefetch(p + sizeof(Block) - 1, _MM_HINT_T0);
    }
  }

 private:
  uintptr_t next_line_ = 0;
  int64_t lines_per_block_ = 0;  // 0: the near prefetch
};

// Calls repack_block(w, b) for each of the n_blocks blocks (or super-blocks) b of the strip
// of rows [row, row + 16) of the tile (w: its rows, see strip16_rows), the repacking's
// prefetch (RepackPrefetch) alongside.
template <typename Block, class RepackBlock>
inline void for_each_strip_block(const TileJob& job, int64_t row, int n_rows, int64_t n_blocks,
                                 RepackBlock&& repack_block) {
  const Block* w[kStrip16Rows];
  strip16_rows(job, row, n_rows, w);
  RepackPrefetch<Block> prefetch(job, row, n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch(b, w, n_rows);
    repack_block(w, b);
  }
}

// A 16-row transpose of 8 dwords per row (24 instructions): the rows come in pairs, z[i]
// holding row paired_row(i) in its low 256 bits and row paired_row(i) + 4 in its high
// ones (so rows 0..3 beside 4..7 in z[0..3], rows 8..11 beside 12..15 in z[4..7]);
// afterwards out[k] holds dword k of row r in lane r (r < 16).
constexpr int paired_row(int i) { return i % 4 + 8 * (i / 4); }
inline __m512i load_row_pair(const void* low, const void* high) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(avx2::load256(low)), avx2::load256(high), 1);
}
inline void transpose_rows16(const __m512i z[8], __m512i out[8]) {
  __m512i u[8];  // u[4 g + k], 128-bit lane l: dword k + 4 (l % 2) of the 4 rows in lane l of z[4 g..]
  for (int g = 0; g < 2; ++g) {
    const __m512i* zg = z + 4 * g;
    const __m512i t0 = _mm512_unpacklo_epi32(zg[0], zg[1]), t1 = _mm512_unpackhi_epi32(zg[0], zg[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(zg[2], zg[3]), t3 = _mm512_unpackhi_epi32(zg[2], zg[3]);
    u[4 * g + 0] = _mm512_unpacklo_epi64(t0, t2);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t0, t2);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t1, t3);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t1, t3);
  }
  // Lanes 0 and 2 of u[k] are rows 0..3 and 4..7, of u[4 + k] rows 8..11 and 12..15.
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm512_shuffle_i64x2(u[k], u[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
    out[k + 4] = _mm512_shuffle_i64x2(u[k], u[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// 32 bytes at `offset` in block b of each of the 16 rows w (see strip16_rows), moved into
// place: out[k] holds bytes 4k..4k+3 of row r in 32-bit lane r.
template <typename Block>
inline void move_into_place(const Block* const* w, int64_t b, size_t offset, uint8_t (&out)[8][64]) {
  const auto bytes = [&](int r) { return reinterpret_cast<const uint8_t*>(&w[r][b]) + offset; };
  __m512i pairs[8], steps[8];
  for (int i = 0; i < 8; ++i) pairs[i] = load_row_pair(bytes(paired_row(i)), bytes(paired_row(i) + 4));
  transpose_rows16(pairs, steps);
  for (int k = 0; k < 8; ++k) _mm512_storeu_si512(out[k], steps[k]);
}

// The 8 scales and 8 minimums of a super-block of two rows, row `low`'s in the low 128
// bits: per half [scales 0..7, mins 0..7] as bytes, as quant::dot_scales::unpack_q4_K
// gives them (its steps, in registers, for both rows at once). `low` and `high` are the
// 12 scale bytes b0..b11; 16 bytes are read from each, which stay inside the block.
inline __m256i unpack_scales(const uint8_t* low, const uint8_t* high) {
  const auto both = [](__m128i pattern) { return _mm256_broadcastsi128_si256(pattern); };
  const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(avx2::load128(low)), avx2::load128(high), 1);
  // [b0..b3, b8..b11, b4..b7, b8..b11]: scales 0..3, low bits of scales 4..7, mins 0..3,
  // low bits of mins 4..7 (the high nibbles of b8..b11).
  const __m256i x = _mm256_shuffle_epi8(v, both(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11)));
  const __m256i low_bits = _mm256_or_si256(
      _mm256_and_si256(x, both(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0))),
      _mm256_and_si256(_mm256_srli_epi16(x, 4), both(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15))));
  // The top 2 bits of b0..b3 (b4..b7) are bits 4..5 of scales (mins) 4..7.
  const __m256i top = _mm256_shuffle_epi8(v, both(_mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)));
  return _mm256_or_si256(low_bits, _mm256_and_si256(_mm256_srli_epi16(top, 2), _mm256_set1_epi8(0x30)));
}

// Whether single-token passes ask for their weights into L2 far ahead, besides L1 (not on
// AMD's cores: see RowPrefetch and run_strips16).
inline bool single_token_l2_prefetch() {
  static const bool helps = cpu_features().vendor != "AuthenticAMD";
  return helps;
}

// The single-token kernels (matmul_gemv_*_avx512vnni.cpp) read one row after another,
// start to end: one stream, whose bytes they ask for kRowPrefetchBytes ahead (in the row
// being read or the next) into L1 (matmul_tiles.h; on Zen 4, 4, 6, 8 and 12 KiB ahead
// were no faster) and, on Intel's cores, kL2RowPrefetchBytes ahead into L2 too: there
// that second request raised decoding's share of the bandwidth markedly, while on AMD's
// Zen 4 decoding ran faster without it (one of the two requests' worth of load slots a
// line, and the L2's own prefetcher follows the stream). Made once per kernel call.
class RowPrefetch {
 public:
  RowPrefetch() : into_l2_(single_token_l2_prefetch()) {}
  // While `bytes` bytes at `block` are multiplied.
  void operator()(const void* block, size_t bytes) const {
    const uintptr_t p = reinterpret_cast<uintptr_t>(block);
    for (size_t at = 0; at < bytes; at += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(p + kRowPrefetchBytes + at), _MM_HINT_T0);
      if (into_l2_) _mm_prefetch(reinterpret_cast<const char*>(p + kL2RowPrefetchBytes + at), _MM_HINT_T1);
    }
  }

 private:
  bool into_l2_;
};

// Writes the 16 row results of token `col` (the first `n_rows` of them).
inline void store_strip16(const TileJob& job, int64_t row, int64_t col, int n_rows, __m512 v) {
  float* y = job.y + static_cast<size_t>(col) * job.y_stride + static_cast<size_t>(row);
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n_rows) - 1), v);
}

// The strips of rows [0, n_rows) of the tile, one after another: those from `row` at
// strip (row / 16) * strip_length.
template <class Format>
void repack_rows16(const TileJob& job, typename Format::Strip* strips) {
  const int64_t strip_length = Format::strip_length(job.n_in);  // Strips per 16 rows
  for (int64_t row = 0; row < job.n_rows; row += kStrip16Rows) {
    const int n_rows = static_cast<int>(std::min<int64_t>(job.n_rows - row, kStrip16Rows));
    Format::repack(job, row, n_rows, strips + row / kStrip16Rows * strip_length);
  }
}

// TileKernel::repack of a Format: the layout run_strips16 repacks a panel into, so that
// rows [r, r + n) (r a multiple of 16) are at strip (r / 16) * strip_length.
template <class Format>
size_t repack_strips16(const TileJob& job, std::byte* out) {
  using Strip = typename Format::Strip;
  const size_t bytes = static_cast<size_t>((job.n_rows + kStrip16Rows - 1) / kStrip16Rows) *
                       static_cast<size_t>(Format::strip_length(job.n_in)) * sizeof(Strip);
  if (out != nullptr) repack_rows16<Format>(job, reinterpret_cast<Strip*>(out));
  return bytes;
}

// Kept copies (TileKernel::repack) are multiplied straight from memory, a panel's strips
// one after another: one run of bytes. For a tile of few tokens (decoding several
// sequences) each strip's arithmetic is short, and the hardware prefetcher alone left the
// loads waiting: while a strip is multiplied, the kernel asks for the bytes of the strip
// at least kKeptPrefetchBytes on, block by block, into L2 (past the panel too: the matmul
// gives such tiles long runs of rows, so the bytes ahead are mostly the same thread's
// next ones; 64 KiB did better than 32 or 128, and as well as 16 with the long runs).
// Tiles of many tokens spend their time multiplying and ask for nothing; so do single
// tokens on AMD's Zen 4, whose L2 prefetcher follows the one run of bytes by itself and
// whose decoding ran markedly faster without the requests (single_token_l2_prefetch).
constexpr size_t kKeptPrefetchBytes = 64 * 1024;

// Every token of the tile against the repacked strips of its rows, job.cols_per_pass
// tokens at a time (activations that stay in L2 while every strip passes over them).
// prefetch_distance: bytes from a strip to the one whose lines its first multiply call
// asks for (Format::multiply's `ahead`), 0 for none.
template <class Format>
void multiply_strips16(const TileJob& job, const typename Format::Strip* strips, uintptr_t prefetch_distance) {
  const int64_t strip_length = Format::strip_length(job.n_in);  // Strips per 16 rows
  const int64_t pass = job.cols_per_pass > 0 ? job.cols_per_pass : job.n_cols;
  for (int64_t first = 0; first < job.n_cols; first += pass) {
    const int64_t last = std::min(first + pass, job.n_cols);
    for (int64_t row = 0; row < job.n_rows; row += kStrip16Rows) {
      const typename Format::Strip* strip = strips + row / kStrip16Rows * strip_length;
      const int n_rows = static_cast<int>(std::min<int64_t>(job.n_rows - row, kStrip16Rows));
      // The first call over this strip asks for the lines ahead, once.
      const char* ahead =
          prefetch_distance == 0 ? nullptr : reinterpret_cast<const char*>(strip) + prefetch_distance;
      int64_t col = first;
      for (; col + kStripTokens <= last; col += kStripTokens) {
        __m512 acc[kStripTokens];
        Format::template multiply<kStripTokens>(job, strip, col, acc, std::exchange(ahead, nullptr));
        for (int j = 0; j < kStripTokens; ++j) store_strip16(job, row, col + j, n_rows, acc[j]);
      }
      for (; col + 4 <= last; col += 4) {
        __m512 acc[4];
        Format::template multiply<4>(job, strip, col, acc, std::exchange(ahead, nullptr));
        for (int j = 0; j < 4; ++j) store_strip16(job, row, col + j, n_rows, acc[j]);
      }
      for (; col + 2 <= last; col += 2) {
        __m512 acc[2];
        Format::template multiply<2>(job, strip, col, acc, std::exchange(ahead, nullptr));
        for (int j = 0; j < 2; ++j) store_strip16(job, row, col + j, n_rows, acc[j]);
      }
      for (; col < last; ++col) {
        __m512 acc[1];
        Format::template multiply<1>(job, strip, col, acc, std::exchange(ahead, nullptr));
        store_strip16(job, row, col, n_rows, acc[0]);
      }
    }
  }
}

// Format::multiply's prefetch: block b's bytes of the strip at `ahead` (nullptr: none),
// and with them the next lines of the KV lookahead (the bus has room for both).
template <class Strip>
inline void prefetch_strip_block(const TileJob& job, const char* ahead, int64_t b) {
  if (ahead == nullptr) return;
  fetch_lookahead(job.lookahead);
  const char* p = ahead + static_cast<size_t>(b) * sizeof(Strip);
  for (size_t at = 0; at < sizeof(Strip); at += 64) _mm_prefetch(p + at, _MM_HINT_T1);
}

// Runs a Format over the tile: Format::Strip is the repacked form of one block (or
// super-block) of 16 rows, Format::repack(job, row, n_rows, strip) fills a strip's blocks
// (rows past n_rows repeat the last real one: see strip16_rows), Format::multiply<C>(job,
// strip, col, acc, ahead) accumulates C tokens' results (and asks for the lines of the
// strip at `ahead` as it goes: prefetch_strip_block). As avx2::run_strips: every strip is
// repacked once into scratch, then passes over the tokens. Rows kept repacked
// (job.strips, in Kept's layout: the format's TileKernel::repack) are multiplied as they
// are, for any number of tokens (TileKernel::kept_for_single_tokens_up_to). `single_tokens`
// (the VNNI single-token kernel of the format where there is one, else the AVX2 kernel)
// runs tiles of fewer than kMinRepackTokens tokens whose rows are not kept.
template <class Format, class Kept = Format>
void run_strips16(const TileJob& job, void (*single_tokens)(const TileJob&)) {
  if (job.n_cols < kMinRepackTokens && job.strips == nullptr) {
    single_tokens(job);
    return;
  }
  if (job.strips != nullptr) {
    const size_t strip_bytes = static_cast<size_t>(Kept::strip_length(job.n_in)) * sizeof(typename Kept::Strip);
    const uintptr_t distance =
        job.n_cols <= kFarPrefetchTokens && (job.n_cols > 1 || single_token_l2_prefetch())
            ? avx2::whole_strips_ahead(strip_bytes, kKeptPrefetchBytes)
            : 0;
    multiply_strips16<Kept>(job, reinterpret_cast<const typename Kept::Strip*>(job.strips), distance);
    return;
  }
  auto* strips = reinterpret_cast<typename Format::Strip*>(job.scratch);
  repack_rows16<Format>(job, strips);
  multiply_strips16<Format>(job, strips, 0);
}

}  // namespace
}  // namespace pagoda::backend::cpu::avx512vnni
