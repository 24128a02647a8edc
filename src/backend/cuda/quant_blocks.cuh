#pragma once
// Device dequantization of every weight format matmul and get_rows read, bit-identical
// with quant::dequantize_row on the host (src/quant/dequantize*.cpp): the same f32
// operations in the same order. Every product and difference is written as __fmul_rn /
// __fadd_rn / __fsub_rn so that nvcc cannot contract d * q - m into one fused
// multiply-add (which would round once instead of twice and change the bits).
//
// The kernels see a weight row as chunks of 32 consecutive values: one block of the
// 32-value formats, one 32-value sub-block of the 256-value k- and i-quants, 32 elements
// of F32 / F16 / BF16 (the last chunk of a plain row may hold fewer). Each format's
// WeightFormat<T>::chunk writes chunk `sub` of the block at `block` into v[0..32).
//
// Alignment: blocks are read with 16-bit loads, so rows must start at even addresses
// (every block size is even, so every block does too); F32 rows need 4-byte alignment.
// The host side of each op checks this.

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "quant/blocks.h"

namespace pagoda::backend::cuda {

// Values of one dequantized chunk.
constexpr int kChunkValues = 32;

namespace blocks_detail {

// A 16-bit little-endian value at an even address.
__device__ __forceinline__ uint32_t load_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

// 4 * kWords bytes read from an even address as 16-bit halves; byte j is operator[](j).
// Used with constant indices in unrolled loops, so the words stay in registers.
template <int kWords>
struct PackedBytes {
  uint32_t w[kWords];
  __device__ __forceinline__ uint32_t operator[](int j) const { return (w[j >> 2] >> (8 * (j & 3))) & 0xFFu; }
};

template <int kWords>
__device__ __forceinline__ PackedBytes<kWords> load_bytes(const uint8_t* p) {
  PackedBytes<kWords> b;
#pragma unroll
  for (int i = 0; i < kWords; ++i) b.w[i] = load_u16(p + 4 * i) | (load_u16(p + 4 * i + 2) << 16);
  return b;
}

// Half bits to float: exact (NaN payloads aside, which no weight carries).
__device__ __forceinline__ float half_to_f32(uint32_t bits) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
}

// A byte as the signed int8 it stores.
__device__ __forceinline__ int as_int8(uint32_t byte) { return static_cast<int>(static_cast<int8_t>(byte)); }

// kIQ4NLValues[idx] (idx 0..15) without a memory lookup: the 16 signed bytes packed into
// four words, picked with byte permutes (lanes index the table divergently, which
// constant memory would serialize).
__host__ __device__ constexpr uint32_t pack_iq4_word(int first) {
  return static_cast<uint32_t>(static_cast<uint8_t>(quant::kIQ4NLValues[first])) |
         static_cast<uint32_t>(static_cast<uint8_t>(quant::kIQ4NLValues[first + 1])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(quant::kIQ4NLValues[first + 2])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(quant::kIQ4NLValues[first + 3])) << 24;
}

__device__ __forceinline__ float iq4_value(uint32_t idx) {
  constexpr uint32_t w0 = pack_iq4_word(0), w1 = pack_iq4_word(4);
  constexpr uint32_t w2 = pack_iq4_word(8), w3 = pack_iq4_word(12);
  const uint32_t low_half = __byte_perm(w0, w1, idx & 7u);   // byte 0: table[idx & 7]
  const uint32_t high_half = __byte_perm(w2, w3, idx & 7u);  // byte 0: table[8 + (idx & 7)]
  const uint32_t byte = ((idx & 8u) ? high_half : low_half) & 0xFFu;
  return static_cast<float>(as_int8(byte));
}

// The 6-bit scale and min of sub-block j (0..7) of Q4_K / Q5_K (quant/kquant_packing.h:
// unpack_scale_min_k4). `packed` is the 12-byte scales array.
__device__ __forceinline__ void k4_scale_min(int j, const uint8_t* packed, int& scale, int& min) {
  if (j < 4) {
    scale = packed[j] & 63;
    min = packed[j + 4] & 63;
  } else {
    scale = (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
    min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// Sub-block `sub` of a Q4_K / Q5_K block: its scale d * scale_sub and minimum
// dmin * min_sub, each one rounding as the host computes them.
template <typename Block>
__device__ __forceinline__ void k4_sub_scales(const uint8_t* block, int sub, float& dl, float& ml) {
  const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
  const float dmin = half_to_f32(load_u16(block + offsetof(Block, dmin)));
  int scale, min;
  k4_scale_min(sub, block + offsetof(Block, scales), scale, min);
  dl = __fmul_rn(d, static_cast<float>(scale));
  ml = __fmul_rn(dmin, static_cast<float>(min));
}

// Scale j (0..15) of Q3_K in -32..31 (kquant_packing.h: unpack_scale_q3_k).
__device__ __forceinline__ int q3_k_scale(int j, const uint8_t* packed) {
  const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// 32 values from 16 bytes of 4-bit codebook indices (IQ4_NL, IQ4_XS): low nibbles are
// values 0..15, high nibbles 16..31; value = scale * codebook[index].
__device__ __forceinline__ void iq4_decode_32(const uint8_t* qs, float scale, float (&v)[32]) {
  const PackedBytes<4> q = load_bytes<4>(qs);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    v[j] = __fmul_rn(scale, iq4_value(q[j] & 0xF));
    v[j + 16] = __fmul_rn(scale, iq4_value(q[j] >> 4));
  }
}

}  // namespace blocks_detail

// kValues: values per block; kBytes: bytes per block. For the plain types a "block" is
// one chunk of 32 elements and `count` (1..32) says how many of them the row still has;
// block formats always have whole chunks and ignore it.
template <DType T>
struct WeightFormat;

template <>
struct WeightFormat<DType::F32> {
  static constexpr int kValues = kChunkValues, kBytes = kChunkValues * 4;
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int count, float (&v)[32]) {
    const float* p = reinterpret_cast<const float*>(block);
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = j < count ? p[j] : 0.0f;
  }
};

template <>
struct WeightFormat<DType::F16> {
  static constexpr int kValues = kChunkValues, kBytes = kChunkValues * 2;
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int count, float (&v)[32]) {
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = j < count ? blocks_detail::half_to_f32(blocks_detail::load_u16(block + 2 * j)) : 0.0f;
  }
};

template <>
struct WeightFormat<DType::BF16> {
  static constexpr int kValues = kChunkValues, kBytes = kChunkValues * 2;
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int count, float (&v)[32]) {
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = j < count ? __uint_as_float(blocks_detail::load_u16(block + 2 * j) << 16) : 0.0f;
  }
};

// Q4_0: value = (nibble - 8) * d. Byte j holds values j (low nibble) and j + 16 (high).
template <>
struct WeightFormat<DType::Q4_0> {
  using Block = quant::BlockQ4_0;
  static constexpr int kValues = quant::kQK, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const PackedBytes<4> q = load_bytes<4>(block + offsetof(Block, qs));
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      v[j] = __fmul_rn(static_cast<float>(static_cast<int>(q[j] & 0xF) - 8), d);
      v[j + 16] = __fmul_rn(static_cast<float>(static_cast<int>(q[j] >> 4) - 8), d);
    }
  }
};

// Q4_1: value = nibble * d + m.
template <>
struct WeightFormat<DType::Q4_1> {
  using Block = quant::BlockQ4_1;
  static constexpr int kValues = quant::kQK, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const float m = half_to_f32(load_u16(block + offsetof(Block, m)));
    const PackedBytes<4> q = load_bytes<4>(block + offsetof(Block, qs));
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      v[j] = __fadd_rn(__fmul_rn(static_cast<float>(q[j] & 0xF), d), m);
      v[j + 16] = __fadd_rn(__fmul_rn(static_cast<float>(q[j] >> 4), d), m);
    }
  }
};

// Q5_0: value = (5-bit q - 16) * d; bit j of the 32-bit qh is the fifth bit of value j.
template <>
struct WeightFormat<DType::Q5_0> {
  using Block = quant::BlockQ5_0;
  static constexpr int kValues = quant::kQK, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const uint32_t qh = load_bytes<1>(block + offsetof(Block, qh)).w[0];
    const PackedBytes<4> q = load_bytes<4>(block + offsetof(Block, qs));
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int q0 = static_cast<int>((q[j] & 0xF) | (((qh >> j) & 1u) << 4)) - 16;
      const int q1 = static_cast<int>((q[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16;
      v[j] = __fmul_rn(static_cast<float>(q0), d);
      v[j + 16] = __fmul_rn(static_cast<float>(q1), d);
    }
  }
};

// Q5_1: value = 5-bit q * d + m.
template <>
struct WeightFormat<DType::Q5_1> {
  using Block = quant::BlockQ5_1;
  static constexpr int kValues = quant::kQK, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const float m = half_to_f32(load_u16(block + offsetof(Block, m)));
    const uint32_t qh = load_bytes<1>(block + offsetof(Block, qh)).w[0];
    const PackedBytes<4> q = load_bytes<4>(block + offsetof(Block, qs));
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const uint32_t q0 = (q[j] & 0xF) | (((qh >> j) & 1u) << 4);
      const uint32_t q1 = (q[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4);
      v[j] = __fadd_rn(__fmul_rn(static_cast<float>(q0), d), m);
      v[j + 16] = __fadd_rn(__fmul_rn(static_cast<float>(q1), d), m);
    }
  }
};

// Q8_0: value = q * d.
template <>
struct WeightFormat<DType::Q8_0> {
  using Block = quant::BlockQ8_0;
  static constexpr int kValues = quant::kQK, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const PackedBytes<8> q = load_bytes<8>(block + offsetof(Block, qs));
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = __fmul_rn(static_cast<float>(as_int8(q[j])), d);
  }
};

// Q2_K: sub-block s holds values 32 s .. 32 s + 31, groups 2 s and 2 s + 1 of 16; value l
// is bits 2 (s % 4) .. +1 of qs[32 (s / 4) + l]; value = d * (sc & 15) * q - dmin * (sc >> 4).
template <>
struct WeightFormat<DType::Q2_K> {
  using Block = quant::BlockQ2_K;
  static constexpr int kValues = quant::kQK_K, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int sub, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const float dmin = half_to_f32(load_u16(block + offsetof(Block, dmin)));
    const uint8_t* scales = block + offsetof(Block, scales) + 2 * sub;
    const PackedBytes<8> q = load_bytes<8>(block + offsetof(Block, qs) + 32 * (sub / 4));
    const int shift = 2 * (sub % 4);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const int sc = scales[part];
      const float dl = __fmul_rn(d, static_cast<float>(sc & 0xF));
      const float ml = __fmul_rn(dmin, static_cast<float>(sc >> 4));
#pragma unroll
      for (int l = 0; l < 16; ++l) {
        const int j = 16 * part + l;
        v[j] = __fsub_rn(__fmul_rn(dl, static_cast<float>((q[j] >> shift) & 3)), ml);
      }
    }
  }
};

// Q3_K: as Q2_K for the low two bits; bit s of hmask[l] is value l's high bit, and
// q = low - (high ? 0 : 4); value = (d * scale) * q.
template <>
struct WeightFormat<DType::Q3_K> {
  using Block = quant::BlockQ3_K;
  static constexpr int kValues = quant::kQK_K, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int sub, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d_all = half_to_f32(load_u16(block + offsetof(Block, d)));
    const uint8_t* scales = block + offsetof(Block, scales);
    const PackedBytes<8> q = load_bytes<8>(block + offsetof(Block, qs) + 32 * (sub / 4));
    const PackedBytes<8> hmask = load_bytes<8>(block + offsetof(Block, hmask));
    const int shift = 2 * (sub % 4);
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const float dl = __fmul_rn(d_all, static_cast<float>(q3_k_scale(2 * sub + part, scales)));
#pragma unroll
      for (int l = 0; l < 16; ++l) {
        const int j = 16 * part + l;
        const int low = static_cast<int>((q[j] >> shift) & 3);
        const int offset = ((hmask[j] >> sub) & 1) ? 0 : 4;
        v[j] = __fmul_rn(dl, static_cast<float>(low - offset));
      }
    }
  }
};

// Q4_K: sub-block s: value = (d * scale) * nibble - dmin * min, nibbles from
// qs[32 (s / 2) + l], low for even s, high for odd.
template <>
struct WeightFormat<DType::Q4_K> {
  using Block = quant::BlockQ4_K;
  static constexpr int kValues = quant::kQK_K, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int sub, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    float dl, ml;
    k4_sub_scales<Block>(block, sub, dl, ml);
    const PackedBytes<8> q = load_bytes<8>(block + offsetof(Block, qs) + 32 * (sub / 2));
    const int shift = 4 * (sub % 2);
#pragma unroll
    for (int l = 0; l < 32; ++l) v[l] = __fsub_rn(__fmul_rn(dl, static_cast<float>((q[l] >> shift) & 0xF)), ml);
  }
};

// Q5_K: Q4_K plus a fifth bit: bit s of qh[l] adds 16 to value l of sub-block s.
template <>
struct WeightFormat<DType::Q5_K> {
  using Block = quant::BlockQ5_K;
  static constexpr int kValues = quant::kQK_K, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int sub, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    float dl, ml;
    k4_sub_scales<Block>(block, sub, dl, ml);
    const PackedBytes<8> q = load_bytes<8>(block + offsetof(Block, qs) + 32 * (sub / 2));
    const PackedBytes<8> qh = load_bytes<8>(block + offsetof(Block, qh));
    const int shift = 4 * (sub % 2);
#pragma unroll
    for (int l = 0; l < 32; ++l) {
      const int high = ((qh[l] >> sub) & 1) ? 16 : 0;
      const int value = static_cast<int>((q[l] >> shift) & 0xF) + high;
      v[l] = __fsub_rn(__fmul_rn(dl, static_cast<float>(value)), ml);
    }
  }
};

// Q6_K: sub-block s = 4 h + k (h: half of 128 values, k: quarter): value l has low
// nibble (ql[64 h + 32 (k % 2) + l] >> 4 (k / 2)) & 15 and high bits (qh[32 h + l] >> 2 k)
// & 3, q = that - 32, scale scales[8 h + 2 k + l / 16]; value = (d * scale) * q.
template <>
struct WeightFormat<DType::Q6_K> {
  using Block = quant::BlockQ6_K;
  static constexpr int kValues = quant::kQK_K, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int sub, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const int half = sub / 4, k = sub % 4;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const uint8_t* scales = block + offsetof(Block, scales) + 8 * half + 2 * k;
    const PackedBytes<8> ql = load_bytes<8>(block + offsetof(Block, ql) + 64 * half + 32 * (k % 2));
    const PackedBytes<8> qh = load_bytes<8>(block + offsetof(Block, qh) + 32 * half);
    const int ql_shift = 4 * (k / 2), qh_shift = 2 * k;
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const float ds = __fmul_rn(d, static_cast<float>(as_int8(scales[part])));
#pragma unroll
      for (int l = 0; l < 16; ++l) {
        const int j = 16 * part + l;
        const int q = static_cast<int>(((ql[j] >> ql_shift) & 0xF) | (((qh[j] >> qh_shift) & 3) << 4)) - 32;
        v[j] = __fmul_rn(ds, static_cast<float>(q));
      }
    }
  }
};

// IQ4_NL: value = d * codebook[index].
template <>
struct WeightFormat<DType::IQ4_NL> {
  using Block = quant::BlockIQ4_NL;
  static constexpr int kValues = quant::kQK, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int /*sub*/, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    iq4_decode_32(block + offsetof(Block, qs), half_to_f32(load_u16(block + offsetof(Block, d))), v);
  }
};

// IQ4_XS: sub-block s has the 6-bit scale ls = nibble s of scales_l | bits 2s..2s+1 of
// scales_h << 4; value = (d * (ls - 32)) * codebook[index].
template <>
struct WeightFormat<DType::IQ4_XS> {
  using Block = quant::BlockIQ4_XS;
  static constexpr int kValues = quant::kQK_K, kBytes = sizeof(Block);
  __device__ static void chunk(const uint8_t* block, int sub, int /*count*/, float (&v)[32]) {
    using namespace blocks_detail;
    const float d = half_to_f32(load_u16(block + offsetof(Block, d)));
    const uint32_t scales_h = load_u16(block + offsetof(Block, scales_h));
    const int low = (block[offsetof(Block, scales_l) + sub / 2] >> (4 * (sub % 2))) & 0xF;
    const int high = static_cast<int>((scales_h >> (2 * sub)) & 3u);
    const float dl = __fmul_rn(d, static_cast<float>((low | (high << 4)) - 32));
    iq4_decode_32(block + offsetof(Block, qs) + 16 * sub, dl, v);
  }
};

// Chunk c (values 32 c .. 32 c + count - 1) of a weight row; v[count..32) are zero.
// count is 32 except in the last chunk of a plain-type row whose length is not a
// multiple of 32.
template <DType T>
__device__ __forceinline__ void dequantize_chunk(const uint8_t* row, int64_t c, int count, float (&v)[32]) {
  using Format = WeightFormat<T>;
  constexpr int kChunksPerBlock = Format::kValues / kChunkValues;
  const uint8_t* block = row + (c / kChunksPerBlock) * Format::kBytes;
  Format::chunk(block, static_cast<int>(c % kChunksPerBlock), count, v);
}

}  // namespace pagoda::backend::cuda
