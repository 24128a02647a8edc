// AVX-512 VNNI strip kernels of the 32-value block formats against Q8_0 (or Q8_1)
// activations: 16 rows per strip, vpdpbusd (unsigned weight byte x signed activation
// byte, 4 products per int32 lane). Per block, row and token the exact integer dot of the
// 32 values with the token's quants, then the f32 steps of the AVX2 kernels
// (matmul_strips_q32_avx2.cpp) lane by lane: the same bits.
//
// vpdpbusd wants one unsigned operand. The weights are made unsigned at repack time: the
// offset formats (Q4_0, Q5_0) already are (q stands for q - 8 / q - 16), and the signed
// ones (Q8_0, IQ4_NL) get 128 added (a flip of the top bit); either way the offset times
// the activations' block sum (TileJob::a_sums) comes off the int32 total, exactly.

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "backend/cpu/matmul/matmul_strip_q32_values.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_1;


// One block of 16 rows: chunk k holds values 4k..4k+3 of row r in 32-bit lane r, as
// unsigned bytes.
struct alignas(64) Strip32x16 {
  uint8_t qs[8][64];
  float d[kStrip16Rows];
  float m[kStrip16Rows];  // minimums (Q4_1 / Q5_1), else unused
};

// 16 f16 scales of a strip (one per row, in the lanes' order): stored from the low 16 bits
// of each 32-bit lane, loaded as f32.
inline void store_halves16(uint16_t* halves, __m512i low_bits) {
  _mm256_store_si256(reinterpret_cast<__m256i*>(halves), _mm512_cvtepi32_epi16(low_bits));
}
inline __m512 load_halves16(const uint16_t* halves) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(halves)));
}

// The Q8_0 kept copies (TileKernel::repack): the same values, the scales as f16 and no
// minimums: 544 bytes per 16 x 32 values instead of 640, the size of the rows as stored
// (32-byte aligned: the scales are read with aligned loads). A small model's Q8_0 output
// head is a third of the bytes a decoding step streams, and its matmul waits on them.
struct alignas(32) Strip8x16 {
  uint8_t qs[8][64];
  uint16_t d[kStrip16Rows];
};
static_assert(sizeof(Strip8x16) == 544);

// The activations of tokens col..col + C - 1: each token's blocks, their scales as f32
// (d, or for Q8_1 d then s) and, for the offset formats, their quant sums.
template <int C, class ActivationBlock>
struct Tokens {
  const ActivationBlock* a[C];
  const float* scales[C];
  const int32_t* sums[C];
  Tokens(const TileJob& job, int64_t col) {
    for (int j = 0; j < C; ++j) {
      a[j] = activation_row<ActivationBlock>(job, col + j);
      scales[j] = job.a_scales + static_cast<size_t>(col + j) * job.a_scales_stride;
      sums[j] = job.a_sums == nullptr ? nullptr : job.a_sums + static_cast<size_t>(col + j) * job.a_sums_stride;
    }
  }
};

// The formats whose 16 bytes of qs hold value i in the low nibble of byte i and value
// i + 16 in its high nibble.
template <class Values>
constexpr bool kNibbles = std::is_same_v<Values, avx2::Q4_0Values> || std::is_same_v<Values, avx2::Q4_1Values> ||
                          std::is_same_v<Values, avx2::IQ4_NLValues>;

// Bytes from row 0 to each of the 16 rows, row r in lane r: for one gather of the 16
// rows' first 4 bytes of a block (d, then m or the first quants).
template <typename Block>
inline __m512i row_offsets16(const Block* const (&w)[kStrip16Rows]) {
  __m512i offsets = _mm512_setzero_si512();
  for (int r = 0; r < kStrip16Rows; ++r) {
    const auto at = reinterpret_cast<const char*>(w[r]) - reinterpret_cast<const char*>(w[0]);
    offsets = _mm512_mask_set1_epi32(offsets, static_cast<__mmask16>(1u << r), static_cast<int>(at));
  }
  return offsets;
}

// Calls repack_block(w, b, row_offsets16(w)) for each block b of the strip of rows [row,
// row + 16) of the tile (w: its rows, see strip16_rows), the repacking's prefetch
// (RepackPrefetch) alongside.
template <typename Block, class RepackBlock>
inline void for_each_block16(const TileJob& job, int64_t row, int n_rows, RepackBlock&& repack_block) {
  const Block* w[kStrip16Rows];
  strip16_rows(job, row, n_rows, w);
  const __m512i offsets = row_offsets16(w);
  const int64_t n_blocks = job.n_in / quant::kQK;
  RepackPrefetch<Block> prefetch(job, row, n_blocks);
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch(b, w, kStrip16Rows);
    repack_block(w, b, offsets);
  }
}

// Block b's qs of the 16 rows (16 bytes each), moved into place: packed[j] holds bytes
// 4j..4j+3 of row r in 32-bit lane r. 12 inserts and 8 unpacks (the rows come in as
// a[g], 128-bit lane l holding row g + 4l).
template <typename Block>
inline void transpose_qs16(const Block* const (&w)[kStrip16Rows], int64_t b, __m512i packed[4]) {
  __m512i a[4];
  for (int g = 0; g < 4; ++g) {
    __m512i v = _mm512_castsi128_si512(avx2::load128(w[g][b].qs));
    v = _mm512_inserti32x4(v, avx2::load128(w[g + 4][b].qs), 1);
    v = _mm512_inserti32x4(v, avx2::load128(w[g + 8][b].qs), 2);
    a[g] = _mm512_inserti32x4(v, avx2::load128(w[g + 12][b].qs), 3);
  }
  // 128-bit lane l of t0: dwords 0, 1 of rows 4l, 4l + 1 interleaved; t2 the same of
  // rows 4l + 2, 4l + 3; t1, t3 dwords 2, 3.
  const __m512i t0 = _mm512_unpacklo_epi32(a[0], a[1]), t1 = _mm512_unpackhi_epi32(a[0], a[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(a[2], a[3]), t3 = _mm512_unpackhi_epi32(a[2], a[3]);
  packed[0] = _mm512_unpacklo_epi64(t0, t2);
  packed[1] = _mm512_unpackhi_epi64(t0, t2);
  packed[2] = _mm512_unpacklo_epi64(t1, t3);
  packed[3] = _mm512_unpackhi_epi64(t1, t3);
}

// The stored byte of 64 nibbles: IQ4_NL's table value with 128 added, else the nibble.
template <class Values>
inline __m512i nibble_values(__m512i nibbles) {
  if constexpr (std::is_same_v<Values, avx2::IQ4_NLValues>) {
    const __m512i table = _mm512_broadcast_i32x4(avx2::load128(quant::kIQ4NLValues));
    return _mm512_xor_si512(_mm512_shuffle_epi8(table, nibbles), _mm512_set1_epi8(static_cast<char>(0x80)));
  } else {
    return nibbles;
  }
}

// The int32 sums of block b for C tokens before its products: the offset times each
// token's quant sum taken off (formats stored kOffset above their values), else 0.
template <int C, int kOffset, class Tokens>
inline void start_sums(const Tokens& t, int64_t b, __m512i (&sum)[C]) {
  for (int j = 0; j < C; ++j) {
    sum[j] = kOffset == 0 ? _mm512_setzero_si512() : _mm512_set1_epi32(-kOffset * t.sums[j][b]);
  }
}

// The f32 steps of one block of 16 rows for C tokens, from its exact integer sums: those
// of the AVX2 strips, lane by lane. d, m: the rows' scales and minimums.
template <int C, bool kHasMin, class Tokens>
inline void block_steps(const Tokens& t, int64_t b, const __m512i (&sum)[C], __m512 d, __m512 m, __m512* acc) {
  for (int j = 0; j < C; ++j) {
    if constexpr (kHasMin) {
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(t.scales[j][2 * b]));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), scale, acc[j]);
      acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(t.scales[j][2 * b + 1]), acc[j]);
    } else {
      const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(t.scales[j][b]));
      acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), scale, acc[j]);
    }
  }
}

// Values: an avx2 *Values (the block's 32 values as bytes). kOffset: what the unsigned
// byte stands above the value (0 for the formats with a minimum, whose bytes are the
// values). kSigned: the values are signed bytes, stored with 128 added. kHasMin: Q4_1 /
// Q5_1, result d_w d_a sum(q a) + m_w s_a.
template <class Values, int kOffset, bool kSigned, bool kHasMin, class StripType = Strip32x16>
struct Format32 {
  using Strip = StripType;
  static constexpr bool kHalfScales = std::is_same_v<Strip, Strip8x16>;
  static_assert(!(kHalfScales && kHasMin));
  using Block = typename Values::Block;
  using ActivationBlock = std::conditional_t<kHasMin, BlockQ8_1, BlockQ8_0>;

  static int64_t strip_length(int64_t n_in) { return n_in / quant::kQK; }

  // Block b of the 16 rows side by side (see RepackPrefetch). The values of the
  // nibble formats come from transpose_qs16 (their packed bytes moved into place, then the
  // nibbles taken apart: a third of the instructions of unpacking each row first), the
  // others' paired into 512-bit vectors for transpose_rows16; the scales of the 16 rows
  // come in one gather of each row's first 4 bytes (d, then m or the first quants).
  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_block16<Block>(job, row, n_rows, [&](const Block* const (&w)[kStrip16Rows], int64_t b, __m512i offsets) {
      if constexpr (kNibbles<Values>) {
        __m512i packed[4];
        transpose_qs16(w, b, packed);
        const __m512i low4 = _mm512_set1_epi8(0x0f);
        for (int k = 0; k < 4; ++k) {
          store512(strip[b].qs[k], nibble_values<Values>(_mm512_and_si512(packed[k], low4)));
          store512(strip[b].qs[k + 4], nibble_values<Values>(_mm512_and_si512(_mm512_srli_epi16(packed[k], 4), low4)));
        }
      } else {
        const __m256i flip = _mm256_set1_epi8(kSigned ? static_cast<char>(0x80) : 0);
        __m512i pairs[8], chunks[8];
        for (int i = 0; i < 8; ++i) {
          const __m256i low = _mm256_xor_si256(Values::values(w[paired_row(i)][b]), flip);
          const __m256i high = _mm256_xor_si256(Values::values(w[paired_row(i) + 4][b]), flip);
          pairs[i] = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
        }
        transpose_rows16(pairs, chunks);
        for (int k = 0; k < 8; ++k) store512(strip[b].qs[k], chunks[k]);
      }
      static_assert(offsetof(Block, d) == 0 && sizeof(Block) >= 4);
      const __m512i head = _mm512_i32gather_epi32(offsets, &w[0][b], 1);
      if constexpr (kHalfScales) {
        store_halves16(strip[b].d, head);
      } else {
        _mm512_store_ps(strip[b].d, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head)));
      }
      if constexpr (kHasMin) {
        static_assert(offsetof(Block, m) == 2);
        _mm512_store_ps(strip[b].m, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16))));
      }
    });
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    const Tokens<C, ActivationBlock> t(job, col);
    for (int j = 0; j < C; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      const Strip& s = strip[b];
      prefetch_strip_block<Strip>(job, ahead, b);
      __m512i sum[C];
      start_sums<C, kOffset>(t, b, sum);
      #pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m512i w = load512(s.qs[k]);
        for (int j = 0; j < C; ++j) sum[j] = dpbusd_broadcast(sum[j], w, t.a[j][b].qs + 4 * k);
      }
      if constexpr (kHalfScales) {
        const __m512 d = load_halves16(s.d);
        block_steps<C, kHasMin>(t, b, sum, d, d, acc);
      } else {
        block_steps<C, kHasMin>(t, b, sum, _mm512_load_ps(s.d), _mm512_load_ps(s.m), acc);
      }
    }
  }
};

// The nibble formats' kept copies (TileKernel::repack): each block of 16 rows as
// transpose_qs16 leaves it, the nibbles taken apart as they are multiplied, the scales
// (and minimums) as f16: 320 bytes, Q4_1's size as stored (the 8-bit strips of Format32
// are twice that, and streaming them from memory on every step cost what repacking had).
struct alignas(64) Strip4x16 {
  uint8_t qs[4][64];  // bytes 4k..4k+3 of row r's qs in lane r: values 4k.. (low nibbles), 16 + 4k.. (high)
  uint16_t d[kStrip16Rows];
  uint16_t m[kStrip16Rows];  // Q4_1 only
};

// Block b of the 16 rows w (offsets: row_offsets16) as the packed strips (Packed4's,
// Packed5's) keep it: the qs bytes as transpose_qs16 leaves them, the scales (and, where
// kHasMin, the minimums) as f16.
template <bool kHasMin, class Block, class Strip>
inline void store_packed_block(const Block* const (&w)[kStrip16Rows], int64_t b, __m512i offsets, Strip& strip) {
  __m512i packed[4];
  transpose_qs16(w, b, packed);
  for (int k = 0; k < 4; ++k) store512(strip.qs[k], packed[k]);
  const __m512i head = _mm512_i32gather_epi32(offsets, &w[0][b], 1);
  store_halves16(strip.d, head);
  if constexpr (kHasMin) store_halves16(strip.m, _mm512_srli_epi32(head, 16));
}

// kOffset, kHasMin: as Format32 (IQ4_NL's 128 added comes with its table, nibble_values).
template <class Values, int kOffset, bool kHasMin>
struct Packed4 {
  using Strip = Strip4x16;
  using Block = typename Values::Block;
  using ActivationBlock = std::conditional_t<kHasMin, BlockQ8_1, BlockQ8_0>;
  static_assert(kNibbles<Values>);

  static int64_t strip_length(int64_t n_in) { return n_in / quant::kQK; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_block16<Block>(job, row, n_rows, [&](const Block* const (&w)[kStrip16Rows], int64_t b, __m512i offsets) {
      store_packed_block<kHasMin>(w, b, offsets, strip[b]);
    });
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    const Tokens<C, ActivationBlock> t(job, col);
    for (int j = 0; j < C; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      const Strip& s = strip[b];
      prefetch_strip_block<Strip>(job, ahead, b);
      __m512i packed[4];
      for (int k = 0; k < 4; ++k) packed[k] = load512(s.qs[k]);
      const __m512 d = load_halves16(s.d);
      block<C>(t, b, packed, d, kHasMin ? load_halves16(s.m) : d, acc);
    }
  }

  // The single-token kernel: the strips' arithmetic on the blocks as stored, each block of
  // the 16 rows moved into place as repack moves it (transpose_qs16) and multiplied at
  // once, never written: the same integer sums and f32 steps, so the same bits, for a
  // third of the instructions per byte of the AVX2 single-token kernel.
  static void gemv(const TileJob& job) {
    for (int64_t col = 0; col < job.n_cols; ++col) {
      const Tokens<1, ActivationBlock> t(job, col);
      for (int64_t row = 0; row < job.n_rows; row += kStrip16Rows) {
        const int n_rows = static_cast<int>(std::min<int64_t>(job.n_rows - row, kStrip16Rows));
        __m512 acc[1] = {_mm512_setzero_ps()};
        for_each_block16<Block>(job, row, n_rows, [&](const Block* const (&w)[kStrip16Rows], int64_t b, __m512i offsets) {
          __m512i packed[4];
          transpose_qs16(w, b, packed);
          const __m512i head = _mm512_i32gather_epi32(offsets, &w[0][b], 1);
          const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head));
          const __m512 m = kHasMin ? _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16))) : d;
          block<1>(t, b, packed, d, m, acc);
        });
        store_strip16(job, row, col, n_rows, acc[0]);
      }
    }
  }

 private:
  // Block b of 16 rows (packed: as transpose_qs16 leaves it; d, m: the rows' scales and
  // minimums) against C tokens, into acc.
  template <int C>
  static void block(const Tokens<C, ActivationBlock>& t, int64_t b, const __m512i (&packed)[4], __m512 d,
                    __m512 m, __m512* acc) {
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    __m512i sum[C];
    start_sums<C, kOffset>(t, b, sum);
    #pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i low = nibble_values<Values>(_mm512_and_si512(packed[k], low4));
      const __m512i high = nibble_values<Values>(_mm512_and_si512(_mm512_srli_epi16(packed[k], 4), low4));
      for (int j = 0; j < C; ++j) {
        sum[j] = dpbusd_broadcast(sum[j], low, t.a[j][b].qs + 4 * k);
        sum[j] = dpbusd_broadcast(sum[j], high, t.a[j][b].qs + 16 + 4 * k);
      }
    }
    block_steps<C, kHasMin>(t, b, sum, d, m, acc);
  }
};

// The 5-bit formats' kept copies (TileKernel::repack): each block of 16 rows with its
// low 4 bits as transpose_qs16 leaves them and each row's 32 fifth bits (lane r) regrouped
// so that bit c of byte i is that of value 4c + i (chunk c's value i: low nibbles of
// packed[c] for c < 4, high nibbles of packed[c - 4] after), which one 32-bit shift then
// puts at bit 4 of every byte of chunk c; scales (and Q5_1's minimums) as f16: 352 bytes
// for Q5_0 and 384 for Q5_1, their sizes as stored (Format32's strips of a byte a value
// are 1.8 times that).
struct alignas(32) Strip5x16 {
  uint8_t qs[4][64];         // as Strip4x16's
  uint32_t high_bits[16];    // [row]: regrouped fifth bits
  uint16_t d[kStrip16Rows];
};
struct alignas(32) Strip5x16Min : Strip5x16 {
  uint16_t m[kStrip16Rows];
};
static_assert(sizeof(Strip5x16) == 352 && sizeof(Strip5x16Min) == 384);

// A row's fifth bits (bit v: value v's) regrouped: bit c of byte i is that of value 4c + i.
inline uint32_t regroup_high_bits(uint32_t bits) {
  // Byte i's bit 0 from bit i of a nibble: each nibble spread, then shifted by its chunk.
  constexpr auto spread = [](uint32_t nibble) {
    uint32_t out = 0;
    for (int i = 0; i < 4; ++i) out |= ((nibble >> i) & 1u) << (8 * i);
    return out;
  };
  uint32_t out = 0;
  for (int c = 0; c < 8; ++c) out |= spread((bits >> (4 * c)) & 0xfu) << c;
  return out;
}

// kOffset, kHasMin: as Format32.
template <class Values, int kOffset, bool kHasMin>
struct Packed5 {
  using Strip = std::conditional_t<kHasMin, Strip5x16Min, Strip5x16>;
  using Block = typename Values::Block;
  using ActivationBlock = std::conditional_t<kHasMin, BlockQ8_1, BlockQ8_0>;

  static int64_t strip_length(int64_t n_in) { return n_in / quant::kQK; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_block16<Block>(job, row, n_rows, [&](const Block* const (&w)[kStrip16Rows], int64_t b, __m512i offsets) {
      store_packed_block<kHasMin>(w, b, offsets, strip[b]);
      alignas(64) uint32_t bits[kStrip16Rows];
      _mm512_store_si512(bits, _mm512_i32gather_epi32(offsets, w[0][b].qh, 1));
      for (int r = 0; r < kStrip16Rows; ++r) strip[b].high_bits[r] = regroup_high_bits(bits[r]);
    });
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    const Tokens<C, ActivationBlock> t(job, col);
    for (int j = 0; j < C; ++j) acc[j] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
    for (int64_t b = 0; b < job.n_in / quant::kQK; ++b) {
      const Strip& s = strip[b];
      prefetch_strip_block<Strip>(job, ahead, b);
      const __m512i high = load512(s.high_bits);
      __m512i sum[C];
      start_sums<C, kOffset>(t, b, sum);
      #pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const __m512i packed = load512(s.qs[k]);
        // nibbles | (fifth bits & 0x10): chunk k's bits from bit k, chunk k + 4's from bit k + 4.
        const __m512i first = _mm512_ternarylogic_epi32(_mm512_and_si512(packed, low4),
                                                        _mm512_slli_epi32(high, 4 - k), bit4, 0xf8);
        const __m512i second = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(packed, 4), low4),
                                                         _mm512_srli_epi32(high, k), bit4, 0xf8);
        for (int j = 0; j < C; ++j) {
          sum[j] = dpbusd_broadcast(sum[j], first, t.a[j][b].qs + 4 * k);
          sum[j] = dpbusd_broadcast(sum[j], second, t.a[j][b].qs + 16 + 4 * k);
        }
      }
      const __m512 d = load_halves16(s.d);
      if constexpr (kHasMin) {
        block_steps<C, kHasMin>(t, b, sum, d, load_halves16(s.m), acc);
      } else {
        block_steps<C, kHasMin>(t, b, sum, d, d, acc);
      }
    }
  }
};

}  // namespace

// Signed values |w| <= 127 (Q8_0, IQ4_NL) stored with 128 added; Q4_0 / Q5_0 as stored
// (offset 8 / 16); Q4_1 / Q5_1 as stored, with their minimums.
void tile_q8_0(const TileJob& job) {
  run_strips16<Format32<avx2::Q8_0Values, 128, true, false>, Format32<avx2::Q8_0Values, 128, true, false, Strip8x16>>(
      job, gemv_q8_0);
}
void tile_iq4_nl(const TileJob& job) {
  run_strips16<Format32<avx2::IQ4_NLValues, 128, true, false>, Packed4<avx2::IQ4_NLValues, 128, false>>(job, avx2::tile_iq4_nl);
}
void tile_q4_0(const TileJob& job) {
  run_strips16<Format32<avx2::Q4_0Values, 8, false, false>, Packed4<avx2::Q4_0Values, 8, false>>(
      job, Packed4<avx2::Q4_0Values, 8, false>::gemv);
}
void tile_q5_0(const TileJob& job) {
  run_strips16<Format32<avx2::Q5_0Values, 16, false, false>, Packed5<avx2::Q5_0Values, 16, false>>(job, avx2::tile_q5_0);
}
void tile_q4_1(const TileJob& job) {
  run_strips16<Format32<avx2::Q4_1Values, 0, false, true>, Packed4<avx2::Q4_1Values, 0, true>>(
      job, Packed4<avx2::Q4_1Values, 0, true>::gemv);
}
void tile_q5_1(const TileJob& job) {
  run_strips16<Format32<avx2::Q5_1Values, 0, false, true>, Packed5<avx2::Q5_1Values, 0, true>>(job, avx2::tile_q5_1);
}

size_t repack_q8_0(const TileJob& job, std::byte* out) {
  return repack_strips16<Format32<avx2::Q8_0Values, 128, true, false, Strip8x16>>(job, out);
}
size_t repack_iq4_nl(const TileJob& job, std::byte* out) { return repack_strips16<Packed4<avx2::IQ4_NLValues, 128, false>>(job, out); }
size_t repack_q4_0(const TileJob& job, std::byte* out) { return repack_strips16<Packed4<avx2::Q4_0Values, 8, false>>(job, out); }
size_t repack_q4_1(const TileJob& job, std::byte* out) { return repack_strips16<Packed4<avx2::Q4_1Values, 0, true>>(job, out); }
size_t repack_q5_0(const TileJob& job, std::byte* out) { return repack_strips16<Packed5<avx2::Q5_0Values, 16, false>>(job, out); }
size_t repack_q5_1(const TileJob& job, std::byte* out) { return repack_strips16<Packed5<avx2::Q5_1Values, 0, true>>(job, out); }

}  // namespace pagoda::backend::cpu::avx512vnni
