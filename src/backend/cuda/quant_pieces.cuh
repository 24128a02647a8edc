#pragma once
// Weight rows read as pieces of 8 consecutive values for the few-token matmul
// (matmul_vec.cu): piece p holds values [8p, 8p + 8) of its row. This file: the plain
// types and the 32-value block formats; quant_pieces_k.cuh the 256-value ones. Consecutive threads take
// consecutive pieces, so a warp's loads of weights and of activations cover contiguous
// bytes. Each format's WeightPiece<T> reads its piece's bytes (load: the raw bits into
// registers, issued ahead of their use) and turns them into values (decode) with the
// same f32 operations as WeightFormat<T>::chunk (quant_blocks.cuh), so the values are
// the host's bits.
//
// kAlign: the alignment (bytes) the loads need of a row's start and of its stride: 16
// where a piece is read with one vector load (the plain types; Q4_K, whose 144-byte
// blocks keep a 16-byte aligned row aligned), 2 for the rest (16-bit loads). Formats
// without a WeightPiece (kSupported false: Q2_K, Q3_K) go through the staged kernel.

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/quant_blocks.cuh"
#include "backend/cuda/small_int_float.h"
#include "core/dtype.h"
#include "quant/blocks.h"

namespace pagoda::backend::cuda {

inline constexpr int kPieceValues = 8;

namespace pieces_detail {

__device__ __forceinline__ uint32_t ldg_u16(const uint8_t* p) {
  return __ldg(reinterpret_cast<const unsigned short*>(p));
}
// 8 bytes at an even address, as two little-endian words.
__device__ __forceinline__ uint2 ldg_8_bytes(const uint8_t* p) {
  return make_uint2(ldg_u16(p) | (ldg_u16(p + 2) << 16), ldg_u16(p + 4) | (ldg_u16(p + 6) << 16));
}
__device__ __forceinline__ uint32_t byte_of(uint2 w, int j) {
  return ((j < 4 ? w.x : w.y) >> (8 * (j & 3))) & 0xFFu;
}
__device__ __forceinline__ float half_bits_to_f32(uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits & 0xFFFFu)));
}
// The block of `Block`s piece p of a row lies in, kPieces pieces to a block (4 for the
// 32-value formats, 32 for the 256-value ones).
template <typename Block, int kPieces>
__device__ __forceinline__ const uint8_t* block_of(const uint8_t* row, int64_t p) {
  static_assert((kPieces & (kPieces - 1)) == 0, "a power of two: the division is a shift");
  return row + static_cast<int64_t>(static_cast<uint64_t>(p) / kPieces) * static_cast<int64_t>(sizeof(Block));
}

// The 8 nibbles of quarter k (values 8k .. 8k + 7) of a block's 32 values packed in its
// 16 bytes qs as the 4-bit formats pack them (byte j: value j in its low nibble, value
// j + 16 in its high): bytes 8 (k % 2) .. + 8, nibbles 4 (k / 2) up.
template <typename Block>
struct QuarterNibbles {
  uint2 bytes;
  int quarter;
  __device__ void load(const uint8_t* block, int k) {
    bytes = ldg_8_bytes(block + offsetof(Block, qs) + 8 * (k % 2));
    quarter = k;
  }
  __device__ uint32_t operator[](int l) const { return (byte_of(bytes, l) >> (4 * (quarter / 2))) & 0xF; }
};

// What a piece of a 32-value block with an f16 scale d (and, kMin, a minimum m) reads:
// d (m) and its quarter of the quants (Quarter: QuarterNibbles or FiveBitQuarter).
template <typename Block, typename Quarter, bool kMin>
struct ScaledQuarter {
  uint32_t d, m;
  Quarter q;
  __device__ void load(const uint8_t* row, int64_t p) {
    const uint8_t* block = block_of<Block, 4>(row, p);
    d = ldg_u16(block + offsetof(Block, d));
    if constexpr (kMin) m = ldg_u16(block + offsetof(Block, m));
    q.load(block, static_cast<int>(p & 3));
  }
};
}  // namespace pieces_detail

template <DType T>
struct WeightPiece {
  static constexpr bool kSupported = false;
};

template <>
struct WeightPiece<DType::F32> {
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  struct Raw {
    float4 a, b;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const float4* q = reinterpret_cast<const float4*>(row) + 2 * p;
    r.a = __ldg(q);
    r.b = __ldg(q + 1);
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    v[0] = r.a.x, v[1] = r.a.y, v[2] = r.a.z, v[3] = r.a.w;
    v[4] = r.b.x, v[5] = r.b.y, v[6] = r.b.z, v[7] = r.b.w;
  }
};

namespace pieces_detail {
// The 16-bit float formats: piece p is the 16 bytes of values 8p .. 8p + 7.
struct SixteenBitPiece {
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  using Raw = uint4;
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) { r = __ldg(reinterpret_cast<const uint4*>(row) + p); }
};
}  // namespace pieces_detail

template <>
struct WeightPiece<DType::F16> : pieces_detail::SixteenBitPiece {
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = pieces_detail::half_bits_to_f32(w[i]);
      v[2 * i + 1] = pieces_detail::half_bits_to_f32(w[i] >> 16);
    }
  }
};

template <>
struct WeightPiece<DType::BF16> : pieces_detail::SixteenBitPiece {
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = __uint_as_float(w[i] << 16);
      v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    }
  }
};

// Q8_0: piece p is quarter p % 4 of block p / 4; value = q * d.
template <>
struct WeightPiece<DType::Q8_0> {
  using Block = quant::BlockQ8_0;
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 2;
  struct Raw {
    uint32_t d;
    uint2 q;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = pieces_detail::block_of<Block, 4>(row, p);
    r.d = pieces_detail::ldg_u16(block + offsetof(Block, d));
    r.q = pieces_detail::ldg_8_bytes(block + offsetof(Block, qs) + 8 * (p & 3));
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const float d = pieces_detail::half_bits_to_f32(r.d);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      // The int8 q is byte ^ 0x80 less 128.
      v[j] = __fmul_rn(small_int_to_f32<128>(pieces_detail::byte_of(r.q, j) ^ 0x80u), d);
    }
  }
};

// Q5_0 and Q5_1: Q4_0 / Q4_1 with a fifth bit: bit i of the block's 32-bit qh is the
// fifth bit of value i (quarter k holds values 8k .. 8k + 7).
namespace pieces_detail {

template <typename Block>
struct FiveBitQuarter {
  uint32_t qh;
  QuarterNibbles<Block> q;
  __device__ void load(const uint8_t* block, int k) {
    qh = ldg_u16(block + offsetof(Block, qh)) | (ldg_u16(block + offsetof(Block, qh) + 2) << 16);
    q.load(block, k);
  }
  __device__ uint32_t operator[](int l) const { return q[l] | (((qh >> (8 * q.quarter + l)) & 1u) << 4); }
};

// The 32-value formats' pieces: piece p is quarter p % 4 of block p / 4.
template <typename Block, typename Quarter, bool kMin>
struct QuarterPiece {
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 2;
  using Raw = ScaledQuarter<Block, Quarter, kMin>;
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) { r.load(row, p); }
};

// value = (q - kOffset) d: Q4_0 (nibbles, 8) and Q5_0 (five bits, 16).
template <typename Block, typename Quarter, uint32_t kOffset>
struct OffsetPiece : QuarterPiece<Block, Quarter, false> {
  __device__ static void decode(const ScaledQuarter<Block, Quarter, false>& r, float (&v)[kPieceValues]) {
    const float d = half_bits_to_f32(r.d);
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = __fmul_rn(small_int_to_f32<kOffset>(r.q[l]), d);
  }
};

// value = q d + m: Q4_1 and Q5_1.
template <typename Block, typename Quarter>
struct MinPiece : QuarterPiece<Block, Quarter, true> {
  __device__ static void decode(const ScaledQuarter<Block, Quarter, true>& r, float (&v)[kPieceValues]) {
    const float d = half_bits_to_f32(r.d);
    const float m = half_bits_to_f32(r.m);
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = __fadd_rn(__fmul_rn(small_int_to_f32<0>(r.q[l]), d), m);
  }
};

}  // namespace pieces_detail

template <>
struct WeightPiece<DType::Q4_0>
    : pieces_detail::OffsetPiece<quant::BlockQ4_0, pieces_detail::QuarterNibbles<quant::BlockQ4_0>, 8> {};
template <>
struct WeightPiece<DType::Q5_0>
    : pieces_detail::OffsetPiece<quant::BlockQ5_0, pieces_detail::FiveBitQuarter<quant::BlockQ5_0>, 16> {};
template <>
struct WeightPiece<DType::Q4_1>
    : pieces_detail::MinPiece<quant::BlockQ4_1, pieces_detail::QuarterNibbles<quant::BlockQ4_1>> {};
template <>
struct WeightPiece<DType::Q5_1>
    : pieces_detail::MinPiece<quant::BlockQ5_1, pieces_detail::FiveBitQuarter<quant::BlockQ5_1>> {};

// IQ4_NL: Q4_0's layout; value = d * codebook[index] (blocks_detail::iq4_value).
template <>
struct WeightPiece<DType::IQ4_NL>
    : pieces_detail::QuarterPiece<quant::BlockIQ4_NL, pieces_detail::QuarterNibbles<quant::BlockIQ4_NL>, false> {
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const float d = pieces_detail::half_bits_to_f32(r.d);
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = __fmul_rn(d, blocks_detail::iq4_value(r.q[l]));
  }
};

}  // namespace pagoda::backend::cuda
