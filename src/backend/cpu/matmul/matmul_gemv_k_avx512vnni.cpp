// Single-token (decoding) kernels of Q4_K, Q5_K and Q6_K for AVX-512 VNNI: the blocks as
// stored, no repacking, 64 values per instruction. Each row is read from start to end,
// rows one after the other, so the weights stream from memory in address order.
//
// Per row and super-block they form the exact integer totals of the strip kernels
// (the same integers in any order), then take the strip kernels' f32 step for that row
// and super-block in the lanes of a small vector: acc = fma(float(total), d * a.d, acc)
// (and for Q4_K / Q5_K the same for the minimums' share, subtracted at the end). So a token's
// output has the same bits here as in a batch of any size, and as on AVX2.
//
// Those steps run in the row's own registers as each super-block is summed: nothing is
// kept in scratch for a second pass over 16 rows (at 8192 values per row that scratch
// outgrew L1, and the second pass kept no loads in flight). Super-blocks go two at a
// time: their lanes are summed in one reduction and their scales unpacked together, the
// steps still taken one super-block after the other.

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "backend/cpu/matmul/matmul_strip_avx512.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx512vnni {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQK_K;

// The f32 step of one super-block: `totals` holds [total, minimums' share, ...] of the
// row as int32, `d` the block's scales [d, dmin, ...] as f32.
inline __m128 f32_step(__m128i totals, __m128 d, float a_d, __m128 acc) {
  return _mm_fmadd_ps(_mm_cvtepi32_ps(totals), _mm_mul_ps(d, _mm_set1_ps(a_d)), acc);
}

// `count` adjacent f16 at p (1 or 2: a block's d, or its d and dmin) in the low 32 bits.
inline __m128i half_bits(const void* p, size_t count) {
  uint32_t bits = 0;
  std::memcpy(&bits, p, 2 * count);
  return _mm_cvtsi32_si128(static_cast<int>(bits));
}

// The same as f32 lanes.
inline __m128 halves(const void* p, size_t count) { return _mm_cvtph_ps(half_bits(p, count)); }

// [sum of a's 16 lanes, sum of b's 4 lanes, the same again], exact in int32.
inline __m128i lane_sums(__m512i a, __m128i b) {
  const __m256i a8 = _mm256_add_epi32(_mm512_castsi512_si256(a), _mm512_extracti64x4_epi64(a, 1));
  const __m128i a4 = _mm_add_epi32(_mm256_castsi256_si128(a8), _mm256_extracti128_si256(a8, 1));
  const __m128i pairs = _mm_hadd_epi32(a4, b);
  return _mm_hadd_epi32(pairs, pairs);
}

// [sum of s0's 16 lanes, sum of m0's 4, sum of s1's 16, sum of m1's 4], exact in int32:
// two consecutive super-blocks' sums (s0, s1) and minimums' shares (mins = [m0 | m1]) in
// one reduction, with no slow horizontal adds.
inline __m128i pair_totals(__m512i s0, __m512i s1, __m256i mins) {
  // 128-bit lanes [s0 lanes 0+2, s0 1+3, s1 0+2, s1 1+3]
  const __m512i folded = _mm512_add_epi32(_mm512_shuffle_i64x2(s0, s1, 0x44), _mm512_shuffle_i64x2(s0, s1, 0xee));
  // 128-bit lanes [s0, s1, m0, m1], 4 partial sums each
  const __m512i quarters = _mm512_add_epi32(_mm512_shuffle_i64x2(folded, _mm512_castsi256_si512(mins), 0x48),
                                            _mm512_shuffle_i64x2(folded, _mm512_setzero_si512(), 0x0d));
  const __m512i pairs = _mm512_add_epi32(quarters, _mm512_shuffle_epi32(quarters, _MM_PERM_BADC));
  const __m512i totals = _mm512_add_epi32(pairs, _mm512_shuffle_epi32(pairs, _MM_PERM_CDAB));
  return _mm512_castsi512_si128(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 8, 4, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), totals));
}

// ---- Q4_K and Q5_K ------------------------------------------------------------------

// The token laid out once per tile for Q4_K's and Q5_K's nibble order: the qs bytes 0..63 hold
// sub-blocks 0 and 2 in their low nibbles, 1 and 3 in their high ones (64..127 likewise
// 4..7), so each pair of sub-blocks is one vpdpbusd against quants[4 b + i].
struct ScaleMinToken {
  __m512i* quants;  // [n_blocks][4]: sub-blocks 0|2, 1|3, 4|6, 5|7
  __m128i* groups;  // [n_blocks]: the sum of each of the 8 sub-blocks, int16
  float* scales;    // [n_blocks][2]: the block's d, twice
  ScaleMinToken(const TileJob& job, int64_t col) {
    const int64_t n_blocks = job.n_in / kQK_K;
    quants = reinterpret_cast<__m512i*>(job.scratch);
    groups = reinterpret_cast<__m128i*>(quants + 4 * n_blocks);
    scales = reinterpret_cast<float*>(groups + n_blocks);
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (int i = 0; i < 4; ++i) {  // pair i: sub-blocks 4 (i / 2) + i % 2 and that + 2
        const int first = 4 * (i / 2) + i % 2;
        quants[4 * b + i] = load_row_pair(a[b].qs + 32 * first, a[b].qs + 32 * (first + 2));
      }
      groups[b] = _mm_hadd_epi16(avx2::load128(a[b].bsums), avx2::load128(a[b].bsums + 8));
      scales[2 * b] = scales[2 * b + 1] = a[b].d;
    }
  }
};

struct alignas(64) ByteIndex {
  int8_t bytes[64];
};

// vpshufb controls that widen the scales of sub-blocks 4 j .. 4 j + 3 (j = 0, 1), bytes 0..7
// of every 128-bit lane, to the int16 lanes of packs(dot of pair 2 j, dot of pair 2 j + 1):
// per 128-bit lane, 4 words from the first vector then 4 from the second; lanes 0 and 1
// hold sub-blocks 4 j and 4 j + 1, lanes 2 and 3 hold 4 j + 2 and 4 j + 3.
constexpr ByteIndex packed_scale_bytes(int j) {
  ByteIndex index{};
  for (int k = 0; k < 32; ++k) {
    index.bytes[2 * k] = static_cast<int8_t>(4 * j + (k % 8) / 4 + 2 * (k / 16));
    index.bytes[2 * k + 1] = -1;  // the high byte zero: scales are unsigned
  }
  return index;
}
constexpr ByteIndex kPackedScale[2] = {packed_scale_bytes(0), packed_scale_bytes(1)};

// vpshufb control widening the minimums, bytes 8..15 of each 128-bit lane, to int16.
inline __m256i min_words_index() {
  return _mm256_broadcastsi128_si256(_mm_setr_epi8(8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15, -1));
}

// The values of sub-block pair i (sub-blocks f | f + 2, f = 4 (i / 2) + i % 2) in byte
// order: the low (i even) or high (i odd) nibbles of qs[64 (i / 2) ..]; Q5_K adds bit s
// of qh[l] as the fifth bit of value l of sub-block s.
template <class Block>
inline __m512i pair_values(const Block& w, int i) {
  const __m512i q = load512(w.qs + 64 * (i / 2));
  const __m512i nibbles = _mm512_and_si512(i % 2 ? _mm512_srli_epi16(q, 4) : q, _mm512_set1_epi8(0x0f));
  if constexpr (std::is_same_v<Block, BlockQ4_K>) {
    return nibbles;
  } else {
    // Bit s to bit 4: a left shift by 4 - s for sub-blocks 0..3 and 4 (pairs 0, 1 and the
    // first half of pair 2), a right shift by s - 4 after; one count per 256-bit half.
    // The bits a 16-bit shift brings in from the neighbouring byte fall outside the mask.
    const int f = 4 * (i / 2) + i % 2;
    const __m512i qh = _mm512_broadcast_i64x4(avx2::load256(w.qh));
    const __m512i moved =
        f + 2 <= 4 ? _mm512_sllv_epi16(qh, _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(4 - f)),
                                                               _mm256_set1_epi16(static_cast<int16_t>(2 - f)), 1))
                   : _mm512_srlv_epi16(qh, _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(f - 4)),
                                                               _mm256_set1_epi16(static_cast<int16_t>(f - 2)), 1));
    return _mm512_ternarylogic_epi32(nibbles, moved, _mm512_set1_epi8(0x10), 0xf8);  // nibbles | (moved & 0x10)
  }
}

// One row's super-block: 16 int32 lanes that add up to sum_s scale_s * dot_s (exact).
// vpdpbusd sums 4 products per int32 lane (at most 4 x 31 x 128: exact in int16, so two
// vectors pack into one without loss), then one vpdpwssd per pair of vectors applies
// the 8 sub-block scales. `scale_bytes` holds the block's scales in bytes 0..7 of every
// 128-bit lane.
template <class Block>
inline __m512i scaled_dots(const Block& w, const __m512i* quants, __m512i scale_bytes) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i dot[4];
  for (int i = 0; i < 4; ++i) dot[i] = _mm512_dpbusd_epi32(zero, pair_values(w, i), quants[i]);
  const __m512i scale01 = _mm512_shuffle_epi8(scale_bytes, _mm512_load_si512(kPackedScale[0].bytes));
  const __m512i scale23 = _mm512_shuffle_epi8(scale_bytes, _mm512_load_si512(kPackedScale[1].bytes));
  return _mm512_dpwssd_epi32(_mm512_madd_epi16(_mm512_packs_epi32(dot[0], dot[1]), scale01),
                             _mm512_packs_epi32(dot[2], dot[3]), scale23);
}

template <class Block>
inline float scale_min_row(const TileJob& job, const ScaleMinToken& t, const BlockQ8_K* a, int64_t row,
                           const RowPrefetch& prefetch) {
  const Block* w = weight_row<Block>(job, row);
  const int64_t n_blocks = job.n_in / kQK_K;
  __m128 acc = _mm_setzero_ps();  // [sum, minimums' share, ...]
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    prefetch(&w[b], 2 * sizeof(Block));
    // [scales 0..7, mins 0..7] of block b, then of block b + 1, as bytes.
    const __m512i both = _mm512_castsi256_si512(unpack_scales(w[b].scales, w[b + 1].scales));
    const __m512i s0 = scaled_dots(w[b], t.quants + 4 * b, _mm512_shuffle_i64x2(both, both, 0x00));
    const __m512i s1 = scaled_dots(w[b + 1], t.quants + 4 * b + 4, _mm512_shuffle_i64x2(both, both, 0x55));
    const __m256i mins = _mm256_madd_epi16(_mm256_shuffle_epi8(_mm512_castsi512_si256(both), min_words_index()),
                                           avx2::load256(t.groups + b));
    const __m128 totals = _mm_cvtepi32_ps(pair_totals(s0, s1, mins));
    // [d, dmin] of both blocks, times the token's d of each: the steps of f32_step.
    const __m128 d = _mm_mul_ps(_mm_cvtph_ps(_mm_unpacklo_epi32(half_bits(&w[b].d, 2), half_bits(&w[b + 1].d, 2))),
                                _mm_loadu_ps(t.scales + 2 * b));
    acc = _mm_fmadd_ps(totals, d, acc);
    acc = _mm_fmadd_ps(_mm_movehl_ps(totals, totals), _mm_movehl_ps(d, d), acc);
  }
  for (; b < n_blocks; ++b) {
    prefetch(&w[b], sizeof(Block));
    const __m512i both = _mm512_castsi256_si512(unpack_scales(w[b].scales, w[b].scales));
    const __m512i s = scaled_dots(w[b], t.quants + 4 * b, _mm512_shuffle_i64x2(both, both, 0x00));
    const __m128i mins = _mm_madd_epi16(_mm_shuffle_epi8(_mm512_castsi512_si128(both), _mm256_castsi256_si128(min_words_index())),
                                        t.groups[b]);
    acc = f32_step(lane_sums(s, mins), halves(&w[b].d, 2), a[b].d, acc);
  }
  // acc - acc_min, as the strip kernels end.
  return _mm_cvtss_f32(acc) - _mm_cvtss_f32(_mm_movehdup_ps(acc));
}

template <class Block>
void gemv_scale_min(const TileJob& job) {
  const RowPrefetch prefetch;
  for (int64_t col = 0; col < job.n_cols; ++col) {
    const ScaleMinToken token(job, col);
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    float* y = job.y + static_cast<size_t>(col) * job.y_stride;
    for (int64_t row = 0; row < job.n_rows; ++row) y[row] = scale_min_row<Block>(job, token, a, row, prefetch);
  }
}

// ---- Q6_K -----------------------------------------------------------------------------

struct alignas(64) ScaleIndex {
  int16_t words[32];
};

// vpermw indices on the 16 int16 group scales for half h: in packs(dot of values
// 128 h + 0..63, dot of 128 h + 64..127), 128-bit lane l holds 4 words of group 8 h + l,
// then 4 of group 8 h + 4 + l.
constexpr ScaleIndex group_scale_index(int h) {
  ScaleIndex index{};
  for (int k = 0; k < 32; ++k) index.words[k] = static_cast<int16_t>(8 * h + k / 8 + 4 * ((k % 8) / 4));
  return index;
}
constexpr ScaleIndex kGroupScale[2] = {group_scale_index(0), group_scale_index(1)};

// One row's super-block: 16 int32 lanes that add up to sum_g scale_g * sum((q - 32) * a)
// over the 16 groups (exact). vpdpbusd on the stored values 0..63 (4 products per lane: at
// most 4 x 63 x 128 = 32256, exact in int16), two vectors packed into one, one vpdpwssd
// against the group scales.
inline __m512i q6_K_dots(const BlockQ6_K& w, const BlockQ8_K& a) {
  const __m512i low_nibble = _mm512_set1_epi8(0x0f), top_bits = _mm512_set1_epi8(0x30);
  const __m512i zero = _mm512_setzero_si512();
  const __m256i scales16 = _mm256_cvtepi8_epi16(avx2::load128(w.scales));
  const __m512i scales = _mm512_castsi256_si512(scales16);
  // qh bits 0-1 / 2-3 (values 0..31 / 32..63 of a half) and 4-5 / 6-7 (64..95 / 96..127)
  // to bits 4-5: one 16-bit shift count per 256-bit half.
  const __m512i shift_first = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shift_second = _mm512_inserti64x4(zero, _mm256_set1_epi16(2), 1);
  __m512i packed[2];
  for (int h = 0; h < 2; ++h) {
    // ql[64 h ..] holds the low 4 bits of values 128 h + 0..63 (low nibbles) and
    // 128 h + 64..127 (high nibbles); qh[32 h + l] their top bits.
    const __m512i low_bits = load512(w.ql + 64 * h);
    const __m512i high_bits = _mm512_broadcast_i64x4(avx2::load256(w.qh + 32 * h));
    const __m512i first = _mm512_ternarylogic_epi32(_mm512_and_si512(low_bits, low_nibble),
                                                    _mm512_sllv_epi16(high_bits, shift_first), top_bits, 0xf8);
    const __m512i second = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(low_bits, 4), low_nibble),
                                                     _mm512_srlv_epi16(high_bits, shift_second), top_bits, 0xf8);
    packed[h] = _mm512_packs_epi32(_mm512_dpbusd_epi32(zero, first, load512(a.qs + 128 * h)),
                                   _mm512_dpbusd_epi32(zero, second, load512(a.qs + 128 * h + 64)));
  }
  const __m512i sum =
      _mm512_dpwssd_epi32(_mm512_madd_epi16(packed[0], _mm512_permutexvar_epi16(_mm512_load_si512(kGroupScale[0].words), scales)),
                          packed[1], _mm512_permutexvar_epi16(_mm512_load_si512(kGroupScale[1].words), scales));
  // The stored values are q + 32: 32 * sum_g scale_g * (sum of a over g) comes off.
  const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, avx2::load256(a.bsums)), 5);
  return _mm512_sub_epi32(sum, _mm512_zextsi256_si512(offset));
}

inline float q6_K_row(const TileJob& job, const BlockQ8_K* a, int64_t row, const RowPrefetch& prefetch) {
  const BlockQ6_K* w = weight_row<BlockQ6_K>(job, row);
  __m128 acc = _mm_setzero_ps();
  for (int64_t b = 0; b < job.n_in / kQK_K; ++b) {
    prefetch(&w[b], sizeof(BlockQ6_K));
    acc = f32_step(lane_sums(q6_K_dots(w[b], a[b]), _mm_setzero_si128()), halves(&w[b].d, 1), a[b].d, acc);
  }
  return _mm_cvtss_f32(acc);
}

}  // namespace

void gemv_q4_K(const TileJob& job) { gemv_scale_min<BlockQ4_K>(job); }
void gemv_q5_K(const TileJob& job) { gemv_scale_min<BlockQ5_K>(job); }

void gemv_q6_K(const TileJob& job) {
  const RowPrefetch prefetch;
  for (int64_t col = 0; col < job.n_cols; ++col) {
    const BlockQ8_K* a = activation_row<BlockQ8_K>(job, col);
    float* y = job.y + static_cast<size_t>(col) * job.y_stride;
    for (int64_t row = 0; row < job.n_rows; ++row) y[row] = q6_K_row(job, a, row, prefetch);
  }
}

}  // namespace pagoda::backend::cpu::avx512vnni
