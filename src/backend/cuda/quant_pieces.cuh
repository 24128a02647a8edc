#pragma once
// Weight rows read as pieces of 8 consecutive values for the few-token matmul
// (matmul_vec.cu): piece p holds values [8p, 8p + 8) of its row. Consecutive threads take
// consecutive pieces, so a warp's loads of weights and of activations cover contiguous
// bytes. Each format's WeightPiece<T> reads its piece's bytes (load: the raw bits into
// registers, issued ahead of their use) and turns them into values (decode) with the
// same f32 operations as WeightFormat<T>::chunk (quant_blocks.cuh), so the values are
// the host's bits.
//
// kAlign: the alignment (bytes) the loads need of a row's start and of its stride: 16
// where a piece is read with one vector load (the plain types; Q4_K, whose 144-byte
// blocks keep a 16-byte aligned row aligned), 2 for the rest (16-bit loads). Formats
// without a WeightPiece (kSupported false) go through the staged kernel.

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

template <>
struct WeightPiece<DType::F16> {
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  using Raw = uint4;
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) { r = __ldg(reinterpret_cast<const uint4*>(row) + p); }
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
struct WeightPiece<DType::BF16> {
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  using Raw = uint4;
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) { r = __ldg(reinterpret_cast<const uint4*>(row) + p); }
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
    const uint8_t* block = row + (p >> 2) * static_cast<int64_t>(sizeof(Block));
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

// Q4_0 and Q4_1: byte j of a block's 16 holds values j (low nibble) and j + 16 (high):
// quarter k of the block is bytes 8 (k % 2) .. + 8, nibbles 4 (k / 2) up.
template <>
struct WeightPiece<DType::Q4_0> {
  using Block = quant::BlockQ4_0;
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 2;
  struct Raw {
    uint32_t d;
    uint2 q;
    int shift;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = row + (p >> 2) * static_cast<int64_t>(sizeof(Block));
    const int k = static_cast<int>(p & 3);
    r.d = pieces_detail::ldg_u16(block + offsetof(Block, d));
    r.q = pieces_detail::ldg_8_bytes(block + offsetof(Block, qs) + 8 * (k % 2));
    r.shift = 4 * (k / 2);
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const float d = pieces_detail::half_bits_to_f32(r.d);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t q = (pieces_detail::byte_of(r.q, j) >> r.shift) & 0xF;
      v[j] = __fmul_rn(small_int_to_f32<8>(q), d);
    }
  }
};

template <>
struct WeightPiece<DType::Q4_1> {
  using Block = quant::BlockQ4_1;
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 2;
  struct Raw {
    uint32_t d, m;
    uint2 q;
    int shift;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = row + (p >> 2) * static_cast<int64_t>(sizeof(Block));
    const int k = static_cast<int>(p & 3);
    r.d = pieces_detail::ldg_u16(block + offsetof(Block, d));
    r.m = pieces_detail::ldg_u16(block + offsetof(Block, m));
    r.q = pieces_detail::ldg_8_bytes(block + offsetof(Block, qs) + 8 * (k % 2));
    r.shift = 4 * (k / 2);
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const float d = pieces_detail::half_bits_to_f32(r.d);
    const float m = pieces_detail::half_bits_to_f32(r.m);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t q = (pieces_detail::byte_of(r.q, j) >> r.shift) & 0xF;
      v[j] = __fadd_rn(__fmul_rn(small_int_to_f32<0>(q), d), m);
    }
  }
};

// Q4_K: piece p is quarter p % 4 of sub-block (p / 4) % 8 of block p / 32. The block's
// first 16 bytes (d, dmin, the 12 packed scales) come in one load, its 8 bytes of
// nibbles in another.
template <>
struct WeightPiece<DType::Q4_K> {
  using Block = quant::BlockQ4_K;
  static_assert(sizeof(Block) % 16 == 0 && offsetof(Block, qs) == 16, "Q4_K: a 16-byte head, 16-byte blocks");
  static constexpr bool kSupported = true;
  static constexpr int kAlign = 16;
  struct Raw {
    uint4 head;
    uint2 q;
    int sub;
  };
  __device__ static void load(const uint8_t* row, int64_t p, Raw& r) {
    const uint8_t* block = row + (p >> 5) * static_cast<int64_t>(sizeof(Block));
    r.sub = static_cast<int>((p >> 2) & 7);
    r.head = __ldg(reinterpret_cast<const uint4*>(block));
    r.q = __ldg(reinterpret_cast<const uint2*>(block + offsetof(Block, qs) + 32 * (r.sub / 2) + 8 * (p & 3)));
  }
  // Byte i of the 12 packed scales (bytes 4..15 of the head).
  __device__ static uint32_t scale_byte(const uint4& head, int i) {
    const int b = 4 + i;
    const uint32_t word = b < 8 ? head.y : (b < 12 ? head.z : head.w);
    return (word >> (8 * (b & 3))) & 0xFFu;
  }
  __device__ static void decode(const Raw& r, float (&v)[kPieceValues]) {
    const float d = pieces_detail::half_bits_to_f32(r.head.x);
    const float dmin = pieces_detail::half_bits_to_f32(r.head.x >> 16);
    const int j = r.sub;
    int scale, min;  // blocks_detail::k4_scale_min on the head's bytes
    if (j < 4) {
      scale = static_cast<int>(scale_byte(r.head, j) & 63);
      min = static_cast<int>(scale_byte(r.head, j + 4) & 63);
    } else {
      scale = static_cast<int>((scale_byte(r.head, j + 4) & 0xF) | ((scale_byte(r.head, j - 4) >> 6) << 4));
      min = static_cast<int>((scale_byte(r.head, j + 4) >> 4) | ((scale_byte(r.head, j) >> 6) << 4));
    }
    const float dl = __fmul_rn(d, static_cast<float>(scale));
    const float ml = __fmul_rn(dmin, static_cast<float>(min));
    const int shift = 4 * (j % 2);
#pragma unroll
    for (int l = 0; l < 8; ++l) {
      const uint32_t q = (pieces_detail::byte_of(r.q, l) >> shift) & 0xF;
      v[l] = __fsub_rn(__fmul_rn(dl, small_int_to_f32<0>(q)), ml);
    }
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
    const uint8_t* block = row + (p >> 5) * static_cast<int64_t>(sizeof(Block));
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

}  // namespace pagoda::backend::cuda
