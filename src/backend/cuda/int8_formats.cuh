#pragma once
// The weight formats of the few-token integer kernel (matmul_vec_int8.cu): how a thread
// reads its part of a block into 8-bit integers, the integer sums of that part against
// the activations' quants, and the block's f32 value from the whole block's sums, with
// the operations of the CPU's scalar dot product (quant/dot_scalar.cpp,
// quant/dot_k_scalar.cpp). This file: what every format shares, and the 32-value
// formats Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL (one part a block, Q8_0 / Q8_1
// activations); int8_formats_k.cuh: the 256-value ones (Q8_K activations).
//
// A format F has: Block, kBlockValues, kParts (threads a block), kRuns (runs of 32
// values a part: x words 8 a run), kAlign (the alignment its loads need of rows),
// kActivations; load(block, part, end, Part&); x_offset(part, run) (values into the
// block); sums(Part, x words, XScalars, sumi, summ); value(Part, XScalars, sumi, summ).

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/activations_q8.h"
#include "backend/cuda/quant_pieces.cuh"
#include "quant/blocks.h"

namespace pagoda::backend::cuda::int8_formats {

inline constexpr int kPartWords = 16;  // at most 64 int8 weights (two runs of 32) a part

// A part of a weight block in integers: w[8 r .. 8 r + 7] is run r (32 values, four to a
// word), and the scales the format needs.
struct Part {
  int32_t w[kPartWords];
  int scale[4];  // per run (Q4_K, Q5_K, IQ4_XS: [0], [1]) or per 16 values (Q2_K, Q3_K, Q6_K)
  int min[4];    // likewise (Q4_K, Q5_K: per run; Q2_K: per 16 values)
  float d, m;    // the block's f16 scale and minimum (or dmin) as floats
};

// What a part needs of the activations besides their quants: the scale of the block
// its values are in (Q8_0 / Q8_1 / Q8_K d), Q8_1's s, and the sums of its quants: of the
// block (32-value formats, sum[0]) or of each 16 values (the k-quants: sum[2 r], sum[2 r
// + 1] for run r).
struct XScalars {
  float d = 0.0f, s = 0.0f;
  int32_t sum[4] = {0, 0, 0, 0};
};

__device__ __forceinline__ int32_t dot_words(const int32_t* w, const int32_t* x, int n, int acc) {
#pragma unroll
  for (int i = 0; i < n; ++i) acc = __dp4a(w[i], x[i], acc);
  return acc;
}

// N words of the bytes at p (2-byte aligned): N + 1 aligned words, shifted into place.
// When p is not 4-aligned the first of those starts 2 bytes before p (inside the same
// aligned word, so never a fault), and the last reaches 2 bytes past p + 4 N; where that
// would pass `end` (the matrix's last byte + 1) only its first half is read.
template <int N>
__device__ __forceinline__ void load_words(const uint8_t* p, const uint8_t* end, uint32_t (&out)[N]) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  const auto* aligned = reinterpret_cast<const uint32_t*>(address & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>(address & 3) * 8;
  uint32_t raw[N + 1];
#pragma unroll
  for (int i = 0; i < N; ++i) raw[i] = __ldg(aligned + i);
  const uint32_t* last = aligned + N;
  raw[N] = shift == 0 ? 0u
           : reinterpret_cast<const uint8_t*>(last + 1) <= end
               ? __ldg(last)
               : pieces_detail::ldg_u16(reinterpret_cast<const uint8_t*>(last));
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = __funnelshift_r(raw[i], raw[i + 1], shift);
}

// Bits 0..3 of n to bit 4 of bytes 0..3: the fifth bits of four Q5 values.
__device__ __forceinline__ uint32_t fifth_bits(uint32_t n) {
  return ((n & 1u) | ((n & 2u) << 7) | ((n & 4u) << 14) | ((n & 8u) << 21)) << 4;
}

// The 32 nibbles of qs (words q[0..3]) as values 0..15 (low nibbles) and 16..31, with
// fifth bits from qh where kFive.
template <bool kFive>
__device__ __forceinline__ void nibbles(const uint32_t (&q)[4], uint32_t qh, Part& p) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint32_t low = q[i] & 0x0F0F0F0Fu, high = (q[i] >> 4) & 0x0F0F0F0Fu;
    if constexpr (kFive) {
      low |= fifth_bits((qh >> (4 * i)) & 0xFu);
      high |= fifth_bits((qh >> (16 + 4 * i)) & 0xFu);
    }
    p.w[i] = static_cast<int32_t>(low);
    p.w[4 + i] = static_cast<int32_t>(high);
  }
}

// The IQ4_NL codebook (quant::kIQ4NLValues) as four words of four int8 values.
constexpr uint32_t codebook_word(int w) {
  uint32_t word = 0;
  for (int i = 0; i < 4; ++i) word |= static_cast<uint32_t>(static_cast<uint8_t>(quant::kIQ4NLValues[4 * w + i])) << (8 * i);
  return word;
}
inline constexpr uint32_t kCodebook0 = codebook_word(0), kCodebook1 = codebook_word(1), kCodebook2 = codebook_word(2),
                          kCodebook3 = codebook_word(3);

// The codebook values of four indices (bytes 0..15): entries i & 7 of each half picked
// by byte permutes, the half by bit 3.
__device__ __forceinline__ int32_t codebook_values(uint32_t indices) {
  const uint32_t t = indices | (indices >> 4);
  const uint32_t selector = ((t & 0xFFu) | ((t >> 8) & 0xFF00u)) & 0x7777u;
  const uint32_t low = __byte_perm(kCodebook0, kCodebook1, selector), high = __byte_perm(kCodebook2, kCodebook3, selector);
  const uint32_t upper = ((indices >> 3) & 0x01010101u) * 0xFFu;
  return static_cast<int32_t>((high & upper) | (low & ~upper));
}

// The block value of the formats without a minimum: (d x.d) float(sumi), as the CPU
// computes it for Q5_0, IQ4_NL, Q3_K, Q6_K and IQ4_XS.
struct ScaledValue {
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int) {
    return __fmul_rn(__fmul_rn(p.d, xs.d), static_cast<float>(sumi));
  }
};

// The integer sums of the formats with a scale per 16 values and no minimum (Q3_K,
// Q6_K): sumi = sum over k of scale[k] times the dot of words 4 k .. 4 k + 3.
struct ScalesPer16 {
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars&, int& sumi, int& summ) {
    sumi = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) sumi += p.scale[k] * dot_words(p.w + 4 * k, x + 4 * k, 4, 0);
    summ = 0;
  }
};

// The integer sums of the 32-value formats whose quants need no offset: the dot of the
// block's 8 words (Q8_0, Q4_1, Q5_1, IQ4_NL).
struct PlainSums {
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars&, int& sumi, int& summ) {
    sumi = dot_words(p.w, x, 8, 0);
    summ = 0;
  }
};

// The 32-value formats share one layout of activations: one run a block.
struct Format32 {
  static constexpr int kBlockValues = 32, kParts = 1, kRuns = 1, kAlign = 2;
  __device__ static int x_offset(int, int) { return 0; }
};

// Q8_0: sum (float(sumi) * (d x.d)).
struct Q8_0 : Format32, PlainSums {
  using Block = quant::BlockQ8_0;
  static constexpr ActivationFormat kActivations = ActivationFormat::kQ8_0;
  __device__ static void load(const uint8_t* block, int, const uint8_t* end, Part& p) {
    uint32_t q[8];
    load_words<8>(block + offsetof(Block, qs), end, q);
#pragma unroll
    for (int i = 0; i < 8; ++i) p.w[i] = static_cast<int32_t>(q[i]);
    p.d = pieces_detail::half_bits_to_f32(pieces_detail::ldg_u16(block));
  }
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int) {
    return __fmul_rn(static_cast<float>(sumi), __fmul_rn(p.d, xs.d));
  }
};

// Q4_0 (values q - 8) and Q5_0 (q - 16): float(sumi) * d * x.d and (d x.d) * float(sumi).
template <bool kFive>
struct Q4_0Or5_0 : Format32 {
  using Block = std::conditional_t<kFive, quant::BlockQ5_0, quant::BlockQ4_0>;
  static constexpr ActivationFormat kActivations = ActivationFormat::kQ8_0;
  __device__ static void load(const uint8_t* block, int, const uint8_t* end, Part& p) {
    uint32_t words[kFive ? 5 : 4];  // (qh,) qs
    if constexpr (kFive) {
      load_words<5>(block + offsetof(Block, qh), end, words);
    } else {
      load_words<4>(block + offsetof(Block, qs), end, words);
    }
    const uint32_t q[4] = {words[kFive], words[kFive + 1], words[kFive + 2], words[kFive + 3]};
    nibbles<kFive>(q, kFive ? words[0] : 0u, p);
    p.d = pieces_detail::half_bits_to_f32(pieces_detail::ldg_u16(block));
  }
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars& xs, int& sumi,
                              int& summ) {
    sumi = dot_words(p.w, x, 8, 0) - (kFive ? 16 : 8) * xs.sum[0];
    summ = 0;
  }
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int) {
    if constexpr (kFive) return __fmul_rn(__fmul_rn(p.d, xs.d), static_cast<float>(sumi));
    return __fmul_rn(__fmul_rn(static_cast<float>(sumi), p.d), xs.d);
  }
};

// Q4_1 and Q5_1 (values d q + m, Q8_1 activations): (d x.d) * float(sumi) + m x.s.
template <bool kFive>
struct Q4_1Or5_1 : Format32, PlainSums {
  using Block = std::conditional_t<kFive, quant::BlockQ5_1, quant::BlockQ4_1>;
  static constexpr ActivationFormat kActivations = ActivationFormat::kQ8_1;
  __device__ static void load(const uint8_t* block, int, const uint8_t* end, Part& p) {
    uint32_t words[kFive ? 6 : 5];  // d and m, (qh,) qs
    load_words<kFive ? 6 : 5>(block, end, words);
    const uint32_t q[4] = {words[1 + kFive], words[2 + kFive], words[3 + kFive], words[4 + kFive]};
    nibbles<kFive>(q, kFive ? words[1] : 0u, p);
    p.d = pieces_detail::half_bits_to_f32(words[0]);
    p.m = pieces_detail::half_bits_to_f32(words[0] >> 16);
  }
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int) {
    return __fadd_rn(__fmul_rn(__fmul_rn(p.d, xs.d), static_cast<float>(sumi)), __fmul_rn(p.m, xs.s));
  }
};

// IQ4_NL: indices into the codebook, low nibbles values 0..15, high ones 16..31:
// (x.d d) float(sumi), which is (d x.d) float(sumi) (a product of two floats rounds alike
// either way round).
struct IQ4_NL : Format32, PlainSums, ScaledValue {
  using Block = quant::BlockIQ4_NL;
  static constexpr ActivationFormat kActivations = ActivationFormat::kQ8_0;
  __device__ static void load(const uint8_t* block, int, const uint8_t* end, Part& p) {
    uint32_t q[4];
    load_words<4>(block + offsetof(Block, qs), end, q);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      p.w[i] = codebook_values(q[i] & 0x0F0F0F0Fu);
      p.w[4 + i] = codebook_values((q[i] >> 4) & 0x0F0F0F0Fu);
    }
    p.d = pieces_detail::half_bits_to_f32(pieces_detail::ldg_u16(block));
  }
};

using Q4_0 = Q4_0Or5_0<false>;
using Q5_0 = Q4_0Or5_0<true>;
using Q4_1 = Q4_1Or5_1<false>;
using Q5_1 = Q4_1Or5_1<true>;

}  // namespace pagoda::backend::cuda::int8_formats
