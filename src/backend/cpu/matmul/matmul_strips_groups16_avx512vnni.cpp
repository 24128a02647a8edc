// AVX-512 VNNI strip kernels of Q6_K, Q3_K and Q2_K (a scale per group of 16 values)
// against Q8_K activations: 16 rows per strip, vpdpbusd on the stored values 0..63 / 0..7
// / 0..3 (unsigned, as vpdpbusd wants them). Per super-block, row and token the exact
// int32 sum over the 16 groups of scale x integer group dot, the dot less offset x bsum_g
// for the values' offset (32 / 4; Q2_K has none, but a minimum per group whose share
// sum_g min_g * bsum_g is a second total); then the f32 steps of the AVX2 kernels
// (matmul_strips_groups16_avx2.cpp) lane by lane: the same bits.
//
// A scaled group dot does not fit int16 (16 values x 63 x 128 > 32767), so each group's
// dot is formed on its own in int32 and multiplied by its scale (vpmulld).
//
// Q2_K and Q3_K keep copies of their packed bits (PackedQ2_K16, PackedQ3_K16) for batched
// decoding (and Q2_K's single tokens); Q6_K's kept copy is the byte-a-value strips.

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "backend/cpu/matmul/matmul_strip_groups16.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQK_K;

// Chunk c (0..7) of 32 values of two rows, row `low`'s in the low 256 bits: half
// n = c / 4 (ql += 64 n, qh += 32 n), then m = c % 4 picks low / high nibbles of
// ql[0..31] / ql[32..63] and bits 2m..2m+1 of qh. Values are 0..63 here; the -32 offset
// comes off once per super-block.
inline __m512i q6_values(const BlockQ6_K& low, const BlockQ6_K& high, int c) {
  const int n = c / 4, m = c % 4;
  const __m512i ql = load_row_pair(low.ql + 64 * n + 32 * (m % 2), high.ql + 64 * n + 32 * (m % 2));
  const __m512i nibbles = _mm512_and_si512(m >= 2 ? _mm512_srli_epi16(ql, 4) : ql, _mm512_set1_epi8(0x0f));
  // Bits 2m..2m+1 of each qh byte moved to bits 4..5 by one 16-bit shift; the bits the
  // shift brings in from the neighbouring byte fall outside the mask.
  const __m512i qh = load_row_pair(low.qh + 32 * n, high.qh + 32 * n);
  const __m512i moved = m == 0   ? _mm512_slli_epi16(qh, 4)
                        : m == 1 ? _mm512_slli_epi16(qh, 2)
                        : m == 2 ? qh
                                 : _mm512_srli_epi16(qh, 2);
  return _mm512_ternarylogic_epi32(nibbles, moved, _mm512_set1_epi8(0x30), 0xf8);  // nibbles | (moved & 0x30)
}

// Chunk c (0..7) of 32 values of two rows, as q3_values of the AVX2 kernels: c = 4k + j,
// bits 2j..2j+1 of qs[32k..] with bit c of hmask above them (q + 4, 0..7).
inline __m512i q3_values(const BlockQ3_K& low, const BlockQ3_K& high, int c) {
  const int k = c / 4, j = c % 4;
  const __m512i bits = _mm512_and_si512(_mm512_srli_epi16(load_row_pair(low.qs + 32 * k, high.qs + 32 * k), 2 * j),
                                        _mm512_set1_epi8(3));
  // Bit c of each hmask byte moved to bit 2; the bits the shift brings in from the
  // neighbouring byte fall outside the mask.
  const __m512i hmask = load_row_pair(low.hmask, high.hmask);
  const __m512i moved = c <= 2 ? _mm512_slli_epi16(hmask, 2 - c) : _mm512_srli_epi16(hmask, c - 2);
  return _mm512_ternarylogic_epi32(bits, moved, _mm512_set1_epi8(4), 0xf8);  // bits | (moved & 4)
}

// Chunk c of two rows, as q2_values of the AVX2 kernels: bits 2j..2j+1 of qs[32k..].
inline __m512i q2_values(const BlockQ2_K& low, const BlockQ2_K& high, int c) {
  const int k = c / 4, j = c % 4;
  return _mm512_and_si512(_mm512_srli_epi16(load_row_pair(low.qs + 32 * k, high.qs + 32 * k), 2 * j), _mm512_set1_epi8(3));
}

// The formats: their scale side (matmul_strip_groups16.h) and the values of a row pair.
struct Q6_KGroups16 : avx2::Q6_KScales {
  static __m512i values(const Block& low, const Block& high, int c) { return q6_values(low, high, c); }
};
struct Q3_KGroups16 : avx2::Q3_KScales {
  static __m512i values(const Block& low, const Block& high, int c) { return q3_values(low, high, c); }
};
struct Q2_KGroups16 : avx2::Q2_KScales {
  static __m512i values(const Block& low, const Block& high, int c) { return q2_values(low, high, c); }
};

// 16 bytes per block (`bytes`: a format's scales or minimums, or Q2_K's scale-and-minimum
// bytes) of super-block b of the 16 rows w, stored as out[g][r]: byte g of row r.
template <class Block, class Bytes, typename Byte>
inline void store_group_bytes(const Block* const* w, int64_t b, Bytes&& bytes, Byte (&out)[16][16]) {
  __m512i low[8], high[8];  // [row pair]: bytes 0..7, 8..15
  for (int i = 0; i < 8; ++i) {
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(bytes(w[paired_row(i)][b])),
                                                 bytes(w[paired_row(i) + 4][b]), 1);
    low[i] = _mm512_cvtepi8_epi32(_mm256_castsi256_si128(_mm256_permute4x64_epi64(both, 0x08)));   // qwords 0, 2
    high[i] = _mm512_cvtepi8_epi32(_mm256_castsi256_si128(_mm256_permute4x64_epi64(both, 0x0d)));  // 1, 3
  }
  __m512i lanes[16];  // byte g of row r in lane r (int32)
  transpose_rows16(low, lanes);
  transpose_rows16(high, lanes + 8);
  for (int g = 0; g < 16; ++g) _mm_store_si128(reinterpret_cast<__m128i*>(out[g]), _mm512_cvtepi32_epi8(lanes[g]));
}

// The f16 at `offset` in block b of each of the 16 rows w, as stored (a kept copy's d or dmin).
template <class Block>
inline void copy_halves16(const Block* const* w, int64_t b, size_t offset, uint16_t (&out)[kStrip16Rows]) {
  for (int r = 0; r < kStrip16Rows; ++r) std::memcpy(&out[r], reinterpret_cast<const std::byte*>(&w[r][b]) + offset, sizeof(out[r]));
}

// The 64 qs bytes of block b of the 16 rows w moved into place: qs[s] holds bytes
// 4s..4s+3 of row r in lane r.
template <class Block>
inline void move_qs_into_place(const Block* const* w, int64_t b, uint8_t (&qs)[16][64]) {
  for (int half = 0; half < 2; ++half) {
    move_into_place(w, b, offsetof(Block, qs) + 32 * half, reinterpret_cast<uint8_t(&)[8][64]>(qs[8 * half]));
  }
}

// One super-block of 16 rows (4416 bytes), in scratch or kept (TileKernel::repack): a
// byte a value, so that the multiply puts no values together; the scales as bytes. Kept
// (Q6_K), it is 1.31 times the rows as stored: a kept copy of the packed bits (the size as
// stored) took the values apart once per group of tokens, which cost a batched step
// more than reading the extra bytes does.
struct alignas(64) StripQ6x16 {
  uint8_t qs[8][8][64];   // [chunk of 32 values][step of 4 values][row x 4]
  int8_t scales[16][16];  // [16-value group][row]
  float d[kStrip16Rows];
};
// Q2_K's adds its minimums and dmin (4736 bytes).
struct alignas(64) StripQ2x16 : StripQ6x16 {
  int8_t mins[16][16];  // [16-value group][row]
  float dmin[kStrip16Rows];
};
// Whole cache lines; within the scratch of 16 rows (tile_scratch_bytes per 8 rows).
static_assert(sizeof(StripQ6x16) == 4416 && sizeof(StripQ6x16) <= 2 * (kQK_K / 32) * 384);
static_assert(sizeof(StripQ2x16) == 4736 && sizeof(StripQ2x16) <= 2 * (kQK_K / 32) * 384);

// Integer dot of group g (16 values, 4 steps of 4: values(k) gives step k's bytes of the
// 16 rows) with C tokens, exact in int32, times the group's scale (row r's in lane r),
// added to sum. The formats whose values are stored with an offset pass offsets[j][g]:
// token j's offset x bsum_g, what group g's dot gains from the offset, taken off the dot
// before the scale multiplies it (an integer subtraction on the vector ALUs; the
// multiply ports, which bound these kernels, are spared the offset's own products).
template <int C, class Values>
inline void add_group_dots(const BlockQ8_K* const* a, int64_t b, int g, Values&& values, __m512i scale,
                           const int32_t (*offsets)[16], __m512i* sum) {
  __m512i dot[C];
  for (int j = 0; j < C; ++j) dot[j] = _mm512_setzero_si512();
  #pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512i w = values(k);
    #pragma GCC unroll 8
    for (int j = 0; j < C; ++j) dot[j] = dpbusd_broadcast(dot[j], w, a[j][b].qs + 16 * g + 4 * k);
  }
  #pragma GCC unroll 8
  for (int j = 0; j < C; ++j) {
    if (offsets != nullptr) dot[j] = _mm512_sub_epi32(dot[j], _mm512_set1_epi32(offsets[j][g]));
    sum[j] = _mm512_add_epi32(sum[j], _mm512_mullo_epi32(dot[j], scale));
  }
}

// The multiply of the 16-value-group strips, for the scratch strips (GroupFormat16) and
// Q2_K's and Q3_K's kept copies (PackedQ2_K16, PackedQ3_K16) alike: per super-block the
// exact int32 sum of scale x group dot (Format::add_group), for the formats with an
// offset each dot less offset x bsum_g (sum sc * q * a = sum sc * ((q + offset) * a -
// offset * bsum), exactly), for Q2_K the bsums against its minimums (Format::min_weights)
// for their share; then the f32 steps of the AVX2 kernels lane by lane.
template <class Format, int C>
void multiply_groups16(const TileJob& job, const typename Format::Strip* strip, int64_t col, __m512* acc,
                       const char* ahead) {
  const BlockQ8_K* a[C];
  __m512 acc_min[C];
  for (int j = 0; j < C; ++j) {
    a[j] = activation_row<BlockQ8_K>(job, col + j);
    acc[j] = acc_min[j] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
    const typename Format::Strip& s = strip[b];
    prefetch_strip_block<typename Format::Strip>(job, ahead, b);
    __m512i sum[C];
    for (int j = 0; j < C; ++j) sum[j] = _mm512_setzero_si512();
    alignas(64) int32_t offsets[C][16];  // [token][group]: offset x bsum (the formats with an offset)
    if constexpr (!Format::kMins) {
      for (int j = 0; j < C; ++j) {
        const __m512i bsums = _mm512_cvtepi16_epi32(avx2::load256(a[j][b].bsums));
        _mm512_store_si512(offsets[j], _mm512_slli_epi32(bsums, Format::kOffsetShift));
      }
    }
    for (int g = 0; g < 16; ++g) Format::template add_group<C>(s, a, b, g, Format::kMins ? nullptr : offsets, sum);
    const __m512 d = Format::d(s);
    if constexpr (Format::kMins) {
      __m512i weights[8];
      Format::min_weights(s, weights);
      #pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const __m512 ad = _mm512_set1_ps(a[j][b].d);
        __m512i min_dot = _mm512_setzero_si512();
        #pragma GCC unroll 8
        for (int p = 0; p < 8; ++p) min_dot = _mm512_dpwssd_epi32(min_dot, weights[p], broadcast4(a[j][b].bsums + 2 * p));
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), _mm512_mul_ps(d, ad), acc[j]);
        acc_min[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min_dot), _mm512_mul_ps(Format::dmin(s), ad), acc_min[j]);
      }
    } else {
      #pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[j]), _mm512_mul_ps(d, _mm512_set1_ps(a[j][b].d)), acc[j]);
      }
    }
  }
  if constexpr (Format::kMins) {
    for (int j = 0; j < C; ++j) acc[j] = _mm512_sub_ps(acc[j], acc_min[j]);
  }
}

// Groups 2p and 2p + 1's bytes of the 16 rows (first, second: row r's in byte r) as the
// int16 halves of lane r: what vpdpwssd multiplies a token's bsums pair by.
inline __m512i paired_words(__m128i first, __m128i second) {
  const __m256i paired = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(first, second)),
                                                 _mm_unpackhi_epi8(first, second), 1);
  return _mm512_cvtepi8_epi16(paired);
}

template <class Groups>
struct GroupFormat16 {
  using Strip = std::conditional_t<Groups::kMins, StripQ2x16, StripQ6x16>;
  using Block = typename Groups::Block;
  static constexpr bool kMins = Groups::kMins;
  static constexpr int kOffsetShift = Groups::kOffsetShift;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_strip_block<Block>(job, row, n_rows, strip_length(job.n_in), [&](const Block* const* w, int64_t b) {
      Strip& s = strip[b];
      store_group_bytes(w, b, [](const Block& block) { return Groups::scales(block); }, s.scales);
      for (int h = 0; h < 2; ++h) _mm256_store_ps(s.d + 8 * h, avx2::strip_halves(w + 8 * h, b, offsetof(Block, d)));
      if constexpr (Groups::kMins) {
        store_group_bytes(w, b, [](const Block& block) { return Groups::mins(block); }, s.mins);
        for (int h = 0; h < 2; ++h) _mm256_store_ps(s.dmin + 8 * h, avx2::strip_halves(w + 8 * h, b, offsetof(Block, dmin)));
      }
      #pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        __m512i pairs[8], chunks[8];
        for (int i = 0; i < 8; ++i) pairs[i] = Groups::values(w[paired_row(i)][b], w[paired_row(i) + 4][b], c);
        transpose_rows16(pairs, chunks);
        for (int k = 0; k < 8; ++k) store512(s.qs[c][k], chunks[k]);
      }
    });
  }

  // Group g: steps 4 (g % 2) .. + 3 of chunk g / 2.
  template <int C>
  static void add_group(const Strip& s, const BlockQ8_K* const* a, int64_t b, int g, const int32_t (*offsets)[16],
                        __m512i* sum) {
    add_group_dots<C>(
        a, b, g, [&](int k) { return load512(s.qs[g / 2][4 * (g % 2) + k]); },
        _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s.scales[g]))), offsets, sum);
  }

  // Q2_K's minimums, what multiplies each token's bsums pairs: row r's groups 2p, 2p + 1
  // in the int16 halves of lane r.
  static void min_weights(const Strip& s, __m512i weights[8]) {
    if constexpr (Groups::kMins) {
      for (int p = 0; p < 8; ++p) {
        weights[p] = paired_words(_mm_load_si128(reinterpret_cast<const __m128i*>(s.mins[2 * p])),
                                  _mm_load_si128(reinterpret_cast<const __m128i*>(s.mins[2 * p + 1])));
      }
    }
  }
  static __m512 d(const Strip& s) { return _mm512_load_ps(s.d); }
  static __m512 dmin(const Strip& s) {
    if constexpr (Groups::kMins) {
      return _mm512_load_ps(s.dmin);
    } else {
      return _mm512_setzero_ps();
    }
  }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    multiply_groups16<GroupFormat16, C>(job, strip, col, acc, ahead);
  }
};

// Q2_K's kept copies (TileKernel::repack): each super-block of 16 rows with its qs bytes
// moved into place but not taken apart (a group's values are shifted out as it is
// multiplied, once per group of tokens), the scales and minimums as stored (a nibble
// each), d and dmin as f16: 1344 bytes, the rows' size as stored (the byte-a-value strips
// of GroupFormat16 are 4736).
struct alignas(64) PackedStripQ2x16 {
  uint8_t qs[16][64];          // [step s]: bytes 4s..4s+3 of row r's qs in lane r
  uint8_t scale_mins[16][16];  // [group][row]: the scale in the low nibble, the minimum in the high
  uint16_t d[kStrip16Rows];
  uint16_t dmin[kStrip16Rows];
};
static_assert(sizeof(PackedStripQ2x16) == 1344);

struct PackedQ2_K16 {
  using Strip = PackedStripQ2x16;
  using Block = BlockQ2_K;
  static constexpr bool kMins = true;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_strip_block<Block>(job, row, n_rows, strip_length(job.n_in), [&](const Block* const* w, int64_t b) {
      Strip& s = strip[b];
      move_qs_into_place(w, b, s.qs);
      store_group_bytes(w, b, [](const Block& block) { return avx2::load128(block.scales); }, s.scale_mins);
      copy_halves16(w, b, offsetof(Block, d), s.d);
      copy_halves16(w, b, offsetof(Block, dmin), s.dmin);
    });
  }

  // As GroupFormat16::add_group: group g is bits 2j..2j+1 (j = (g / 2) % 4) of qs bytes
  // 32 (g / 8) + 16 (g % 2) .., steps 8 (g / 8) + 4 (g % 2) .. + 3 of the strip.
  template <int C>
  static void add_group(const Strip& s, const BlockQ8_K* const* a, int64_t b, int g, const int32_t (*offsets)[16],
                        __m512i* sum) {
    const int shift = 2 * ((g / 2) % 4), first = 8 * (g / 8) + 4 * (g % 2);
    const __m512i scale = _mm512_cvtepu8_epi32(
        _mm_and_si128(_mm_load_si128(reinterpret_cast<const __m128i*>(s.scale_mins[g])), _mm_set1_epi8(0x0f)));
    add_group_dots<C>(
        a, b, g,
        [&](int k) { return _mm512_and_si512(_mm512_srli_epi16(load512(s.qs[first + k]), shift), _mm512_set1_epi8(3)); },
        scale, offsets, sum);
  }

  static void min_weights(const Strip& s, __m512i weights[8]) {
    const auto mins = [&](int g) {
      const __m128i bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(s.scale_mins[g]));
      return _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0f));
    };
    for (int p = 0; p < 8; ++p) weights[p] = paired_words(mins(2 * p), mins(2 * p + 1));
  }
  static __m512 d(const Strip& s) { return _mm512_cvtph_ps(avx2::load256(s.d)); }
  static __m512 dmin(const Strip& s) { return _mm512_cvtph_ps(avx2::load256(s.dmin)); }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    multiply_groups16<PackedQ2_K16, C>(job, strip, col, acc, ahead);
  }
};

// Q3_K's kept copies: qs and hmask moved into place (each group's values put together as
// it is multiplied: 2 bits of qs, the hmask bit above them), the scales as signed bytes
// (Q3_KScales'), d as f16: 1824 bytes against 1760 as stored.
struct alignas(32) PackedStripQ3x16 {
  uint8_t qs[16][64];     // [step s]: bytes 4s..4s+3 of row r's qs in lane r
  uint8_t hmask[8][64];   // [step s]: bytes 4s..4s+3 of row r's hmask in lane r
  int8_t scales[16][16];  // [group][row]
  uint16_t d[kStrip16Rows];
};
static_assert(sizeof(PackedStripQ3x16) == 1824);

struct PackedQ3_K16 {
  using Strip = PackedStripQ3x16;
  using Block = BlockQ3_K;
  static constexpr bool kMins = false;
  static constexpr int kOffsetShift = Q3_KGroups16::kOffsetShift;

  static int64_t strip_length(int64_t n_in) { return n_in / kQK_K; }

  static void repack(const TileJob& job, int64_t row, int n_rows, Strip* strip) {
    for_each_strip_block<Block>(job, row, n_rows, strip_length(job.n_in), [&](const Block* const* w, int64_t b) {
      Strip& s = strip[b];
      move_qs_into_place(w, b, s.qs);
      move_into_place(w, b, offsetof(Block, hmask), s.hmask);
      store_group_bytes(w, b, [](const Block& block) { return Q3_KGroups16::scales(block); }, s.scales);
      copy_halves16(w, b, offsetof(Block, d), s.d);
    });
  }

  // As q3_values: group g is chunk c = g / 2, bits 2 (c % 4).. of qs bytes 32 (c / 4) +
  // 16 (g % 2) .. with bit c of hmask bytes 16 (g % 2) .. above them (q + 4).
  template <int C>
  static void add_group(const Strip& s, const BlockQ8_K* const* a, int64_t b, int g, const int32_t (*offsets)[16],
                        __m512i* sum) {
    const int c = g / 2, shift = 2 * (c % 4), first = 8 * (c / 4) + 4 * (g % 2), high_first = 4 * (g % 2);
    const auto values = [&](int k) {
      const __m512i bits = _mm512_and_si512(_mm512_srli_epi16(load512(s.qs[first + k]), shift), _mm512_set1_epi8(3));
      const __m512i hmask = load512(s.hmask[high_first + k]);
      const __m512i moved = c <= 2 ? _mm512_slli_epi16(hmask, 2 - c) : _mm512_srli_epi16(hmask, c - 2);
      return _mm512_ternarylogic_epi32(bits, moved, _mm512_set1_epi8(4), 0xf8);  // bits | (moved & 4)
    };
    add_group_dots<C>(a, b, g, values,
                      _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(s.scales[g]))), offsets, sum);
  }
  static __m512 d(const Strip& s) { return _mm512_cvtph_ps(avx2::load256(s.d)); }
  static __m512 dmin(const Strip&) { return _mm512_setzero_ps(); }

  template <int C>
  static void multiply(const TileJob& job, const Strip* strip, int64_t col, __m512* acc, const char* ahead) {
    multiply_groups16<PackedQ3_K16, C>(job, strip, col, acc, ahead);
  }
};

}  // namespace

void tile_q6_K(const TileJob& job) { run_strips16<GroupFormat16<Q6_KGroups16>>(job, gemv_q6_K); }
size_t repack_q6_K(const TileJob& job, std::byte* out) { return repack_strips16<GroupFormat16<Q6_KGroups16>>(job, out); }
void tile_q3_K(const TileJob& job) { run_strips16<GroupFormat16<Q3_KGroups16>, PackedQ3_K16>(job, avx2::tile_q3_K); }
size_t repack_q3_K(const TileJob& job, std::byte* out) { return repack_strips16<PackedQ3_K16>(job, out); }
// Q2_K keeps its packed bits (PackedQ2_K16).
void tile_q2_K(const TileJob& job) { run_strips16<GroupFormat16<Q2_KGroups16>, PackedQ2_K16>(job, avx2::tile_q2_K); }
size_t repack_q2_K(const TileJob& job, std::byte* out) { return repack_strips16<PackedQ2_K16>(job, out); }

}  // namespace pagoda::backend::cpu::avx512vnni
