#pragma once
// The few-token matmul's pieces (quant_pieces.cuh) of the 256-value formats: piece p is
// quarter p % 4 (values 8 (p % 4) .. + 8) of sub-block s = (p / 4) % 8 of block p / 32,
// so 32 consecutive threads read one block. Q4_K and Q5_K share the head (d, dmin, the 12
// packed scales) that one 16-byte load brings.

#include <cstddef>
#include <cstdint>

#include "backend/cuda/quant_pieces.cuh"

namespace pagoda::backend::cuda {

namespace pieces_detail {

// Sub-block j's scale and minimum of a Q4_K / Q5_K head (its first 16 bytes: d, dmin,
// then the packed scales), each one rounding as the host computes them
// (blocks_detail::k4_sub_scales).
struct K4Scales {
  float dl, ml;
};

// Byte i of the 12 packed scales (bytes 4..15 of the head).
__device__ __forceinline__ uint32_t k4_scale_byte(const uint4& head, int i) {
  const int b = 4 + i;
  const uint32_t word = b < 8 ? head.y : (b < 12 ? head.z : head.w);
  return (word >> (8 * (b & 3))) & 0xFFu;
}

__device__ __forceinline__ K4Scales k4_scales(const uint4& head, int j) {
  const float d = half_bits_to_f32(head.x);
  const float dmin = half_bits_to_f32(head.x >> 16);
  int scale, min;  // blocks_detail::k4_scale_min on the head's bytes
  if (j < 4) {
    scale = static_cast<int>(k4_scale_byte(head, j) & 63);
    min = static_cast<int>(k4_scale_byte(head, j + 4) & 63);
  } else {
    scale = static_cast<int>((k4_scale_byte(head, j + 4) & 0xF) | ((k4_scale_byte(head, j - 4) >> 6) << 4));
    min = static_cast<int>((k4_scale_byte(head, j + 4) >> 4) | ((k4_scale_byte(head, j) >> 6) << 4));
  }
  return {__fmul_rn(d, static_cast<float>(scale)), __fmul_rn(dmin, static_cast<float>(min))};
}

// Value q (0..31) of a sub-block with these scales: dl q - ml, as the host rounds it.
__device__ __forceinline__ float k4_value(const K4Scales& s, uint32_t q) {
  return __fsub_rn(__fmul_rn(s.dl, small_int_to_f32<0>(q)), s.ml);
}

// What a Q4_K or Q5_K piece reads of its block: the head (one 16-byte load) and its 8
// bytes of nibbles (sub-block s's are bytes 32 (s / 2) .. + 32 of qs, low for even s).
template <typename Block>
struct K4Piece {
  uint4 head;
  uint2 q;
  int sub;
  __device__ void load(const uint8_t* block, int64_t p) {
    sub = static_cast<int>((p >> 2) & 7);
    head = __ldg(reinterpret_cast<const uint4*>(block));
    q = __ldg(reinterpret_cast<const uint2*>(block + offsetof(Block, qs) + 32 * (sub / 2) + 8 * (p & 3)));
  }
  __device__ uint32_t nibble(int l) const { return (byte_of(q, l) >> (4 * (sub % 2))) & 0xF; }
};

}  // namespace pieces_detail

// Q4_K: value = dl nibble - ml.
template <>
struct WeightPiece<DType::Q4_K> {
  using Block = quant::BlockQ4_K;
  static_assert(sizeof(Block) % 16 == 0 && offsetof(Block, qs) == 16, "Q4_K: a 16-byte head, 16-byte blocks");
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  using Raw = pieces_detail::K4Piece<Block>;
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    r.load(pieces_detail::block_of<Block, 32>(row, p), p);
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const pieces_detail::K4Scales s = pieces_detail::k4_scales(r.head, r.sub);
#pragma unroll
    for (int l = 0; l < 8; ++l) v[l] = pieces_detail::k4_value(s, r.nibble(l));
  }
};

// Q6_K: piece p is quarter p % 4 of sub-block s = (p / 4) % 8 of block p / 32; the
// sub-block is values [32 k, 32 k + 32) of half s / 4 (k = s % 4): low bits from ql,
// two high bits from qh, one int8 scale per 16 values.
template <>
struct WeightPiece<DType::Q6_K> {
  using Block = quant::BlockQ6_K;
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 2;
  struct Raw {
    uint2 ql, qh;
    uint32_t d, scale;
    int sub;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = pieces_detail::block_of<Block, 32>(row, p);
    r.sub = static_cast<int>((p >> 2) & 7);
    const int half = r.sub / 4, k = r.sub % 4, quarter = static_cast<int>(p & 3);
    r.ql = pieces_detail::ldg_8_bytes(block + offsetof(Block, ql) + 64 * half + 32 * (k % 2) + 8 * quarter);
    r.qh = pieces_detail::ldg_8_bytes(block + offsetof(Block, qh) + 32 * half + 8 * quarter);
    // scales[8 half + 2 k + quarter / 2]: from the 16-bit word at the even offset below it.
    r.scale = pieces_detail::ldg_u16(block + offsetof(Block, scales) + 8 * half + 2 * k) >> (8 * (quarter / 2));
    r.d = pieces_detail::ldg_u16(block + offsetof(Block, d));
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const int k = r.sub % 4;
    const int ql_shift = 4 * (k / 2), qh_shift = 2 * k;
    const float d = pieces_detail::half_bits_to_f32(r.d);
    const float ds = __fmul_rn(d, static_cast<float>(blocks_detail::as_int8(r.scale & 0xFFu)));
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      const uint32_t low = (pieces_detail::byte_of(r.ql, l) >> ql_shift) & 0xF;
      const uint32_t high = (pieces_detail::byte_of(r.qh, l) >> qh_shift) & 3;
      v[l] = __fmul_rn(ds, small_int_to_f32<32>(low | (high << 4)));
    }
  }
};

// Q5_K: Q4_K plus a fifth bit: bit s of qh[l] adds 16 to value l of sub-block s. A
// 176-byte block keeps a 16-byte aligned row's blocks aligned, qs and qh 8-aligned.
template <>
struct WeightPiece<DType::Q5_K> {
  using Block = quant::BlockQ5_K;
  static_assert(sizeof(Block) % 16 == 0 && offsetof(Block, scales) == 4 && offsetof(Block, qh) % 8 == 0 &&
                    offsetof(Block, qs) % 8 == 0,
                "Q5_K: a 16-byte head, 16-byte blocks");
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  struct Raw {
    pieces_detail::K4Piece<Block> k;
    uint2 qh;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = pieces_detail::block_of<Block, 32>(row, p);
    r.k.load(block, p);
    r.qh = __ldg(reinterpret_cast<const uint2*>(block + offsetof(Block, qh) + 8 * (p & 3)));
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const pieces_detail::K4Scales s = pieces_detail::k4_scales(r.k.head, r.k.sub);
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      const uint32_t high = ((pieces_detail::byte_of(r.qh, l) >> r.k.sub) & 1u) << 4;
      v[l] = pieces_detail::k4_value(s, r.k.nibble(l) | high);
    }
  }
};

// IQ4_XS: sub-block s's 6-bit scale ls = nibble s of scales_l | bits 2s..2s+1 of
// scales_h << 4, value = (d * (ls - 32)) * codebook[index]; its 16 bytes of indices are
// qs[16 s ..], low nibbles values 0..15. 136-byte blocks: 8-byte alignment.
template <>
struct WeightPiece<DType::IQ4_XS> {
  using Block = quant::BlockIQ4_XS;
  static_assert(sizeof(Block) % 8 == 0 && offsetof(Block, scales_l) == 4 && offsetof(Block, qs) == 8,
                "IQ4_XS: an 8-byte head, 8-byte blocks");
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 8;
  struct Raw {
    uint2 head;  // d, scales_h; scales_l
    uint2 q;
    int sub, shift;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = pieces_detail::block_of<Block, 32>(row, p);
    const int k = static_cast<int>(p & 3);
    r.sub = static_cast<int>((p >> 2) & 7);
    r.shift = 4 * (k / 2);
    r.head = __ldg(reinterpret_cast<const uint2*>(block));
    r.q = __ldg(reinterpret_cast<const uint2*>(block + offsetof(Block, qs) + 16 * r.sub + 8 * (k % 2)));
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const float d = pieces_detail::half_bits_to_f32(r.head.x);
    const uint32_t scales_h = r.head.x >> 16;
    const int low = static_cast<int>((pieces_detail::byte_of(r.head, 4 + r.sub / 2) >> (4 * (r.sub % 2))) & 0xF);
    const int high = static_cast<int>((scales_h >> (2 * r.sub)) & 3u);
    const float dl = __fmul_rn(d, static_cast<float>((low | (high << 4)) - 32));
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      v[l] = __fmul_rn(dl, blocks_detail::iq4_value((pieces_detail::byte_of(r.q, l) >> r.shift) & 0xF));
    }
  }
};

}  // namespace pagoda::backend::cuda
