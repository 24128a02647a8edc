#pragma once
// The 256-value formats Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS for the few-token
// integer kernel (see int8_formats.cuh): Q8_K activations, four parts of 64 values a
// block.

#include <type_traits>

#include "backend/cuda/int8_formats.cuh"
#include "backend/cuda/quant_pieces_k.cuh"

namespace pagoda::backend::cuda::int8_formats {

struct FormatK {
  static constexpr int kBlockValues = 256, kParts = 4, kRuns = 2;
  static constexpr ActivationFormat kActivations = ActivationFormat::kQ8_K;
};

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// Q4_K and Q5_K: part c holds sub-blocks 2 c and 2 c + 1: value 64 c + l is the low
// nibble of qs[32 c + l], 64 c + 32 + l its high nibble (Q5_K: plus 16 for bits 2 c and
// 2 c + 1 of qh[l]); their scales and minimums come from the packed 12 bytes. The
// block's value: d x.d float(sumi) - dmin x.d float(summ).
template <bool kFive>
struct Q4_KOr5_K : FormatK {
  using Block = std::conditional_t<kFive, quant::BlockQ5_K, quant::BlockQ4_K>;
  static constexpr int kAlign = 16;
  __device__ static int x_offset(int c, int run) { return 64 * c + 32 * run; }
  __device__ static void load(const uint8_t* block, int c, const uint8_t*, Part& p) {
    const uint4 head = __ldg(reinterpret_cast<const uint4*>(block));
    const uint4* qs = reinterpret_cast<const uint4*>(block + offsetof(Block, qs) + 32 * c);
    const uint4 q0 = __ldg(qs), q1 = __ldg(qs + 1);
    uint4 h0 = make_uint4(0, 0, 0, 0), h1 = h0;
    if constexpr (kFive) {
      const uint4* qh = reinterpret_cast<const uint4*>(block + offsetof(Block, qh));
      h0 = __ldg(qh);
      h1 = __ldg(qh + 1);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t bytes = i < 4 ? word_of(q0, i) : word_of(q1, i - 4);
      uint32_t low = bytes & 0x0F0F0F0Fu, high = (bytes >> 4) & 0x0F0F0F0Fu;
      if constexpr (kFive) {
        const uint32_t bits = i < 4 ? word_of(h0, i) : word_of(h1, i - 4);
        low |= ((bits >> (2 * c)) & 0x01010101u) << 4;
        high |= ((bits >> (2 * c + 1)) & 0x01010101u) << 4;
      }
      p.w[i] = static_cast<int32_t>(low);
      p.w[8 + i] = static_cast<int32_t>(high);
    }
    using pieces_detail::k4_scale_byte;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int j = 2 * c + r;  // dot_scales::unpack_q4_K, one sub-block
      if (j < 4) {
        p.scale[r] = static_cast<int>(k4_scale_byte(head, j) & 63);
        p.min[r] = static_cast<int>(k4_scale_byte(head, j + 4) & 63);
      } else {
        p.scale[r] = static_cast<int>((k4_scale_byte(head, j + 4) & 0xF) | ((k4_scale_byte(head, j - 4) >> 6) << 4));
        p.min[r] = static_cast<int>((k4_scale_byte(head, j + 4) >> 4) | ((k4_scale_byte(head, j) >> 6) << 4));
      }
    }
    p.d = pieces_detail::half_bits_to_f32(head.x);
    p.m = pieces_detail::half_bits_to_f32(head.x >> 16);
  }
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars& xs, int& sumi,
                              int& summ) {
    sumi = p.scale[0] * dot_words(p.w, x, 8, 0) + p.scale[1] * dot_words(p.w + 8, x + 8, 8, 0);
    summ = p.min[0] * (xs.sum[0] + xs.sum[1]) + p.min[1] * (xs.sum[2] + xs.sum[3]);
  }
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int summ) {
    return __fsub_rn(__fmul_rn(__fmul_rn(p.d, xs.d), static_cast<float>(sumi)),
                     __fmul_rn(__fmul_rn(p.m, xs.d), static_cast<float>(summ)));
  }
};

using Q4_K = Q4_KOr5_K<false>;
using Q5_K = Q4_KOr5_K<true>;

// Q6_K: in half h = c / 2, value 128 h + 32 r + l takes its low 4 bits from
// ql[64 h + 32 (r % 2) + l] (low nibble for r < 2) and its high 2 bits from bits 2 r of
// qh[32 h + l], stored offset by 32; part c holds r = c % 2 (run 0) and c % 2 + 2 (run
// 1). int8 scales, one per 16 values. The block's value: d x.d float(sumi). 210-byte
// blocks: 2-byte alignment (the ninth word each load_words reads stays in the block).
struct Q6_K : FormatK, ScalesPer16, ScaledValue {
  using Block = quant::BlockQ6_K;
  static constexpr int kAlign = 2;
  __device__ static int x_offset(int c, int run) { return 128 * (c / 2) + 32 * (c % 2) + 64 * run; }
  __device__ static void load(const uint8_t* block, int c, const uint8_t* end, Part& p) {
    const int h = c / 2, m = c % 2;
    uint32_t ql[8], qh[8];
    load_words<8>(block + offsetof(Block, ql) + 64 * h + 32 * m, end, ql);
    load_words<8>(block + offsetof(Block, qh) + 32 * h, end, qh);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t a = (ql[i] & 0x0F0F0F0Fu) | (((qh[i] >> (2 * m)) & 0x03030303u) << 4);
      const uint32_t b = ((ql[i] >> 4) & 0x0F0F0F0Fu) | (((qh[i] >> (2 * m + 4)) & 0x03030303u) << 4);
      p.w[i] = static_cast<int32_t>(__vsub4(a, 0x20202020u));  // bytewise q - 32, each in [-32, 31]
      p.w[8 + i] = static_cast<int32_t>(__vsub4(b, 0x20202020u));
    }
    // Scales of groups 8 h + 2 m, +1 (run 0) and 8 h + 2 m + 4, +5 (run 1).
    const uint8_t* scales = block + offsetof(Block, scales) + 8 * h + 2 * m;
    const uint32_t s01 = pieces_detail::ldg_u16(scales), s45 = pieces_detail::ldg_u16(scales + 4);
    p.scale[0] = static_cast<int8_t>(s01 & 0xFF);
    p.scale[1] = static_cast<int8_t>(s01 >> 8);
    p.scale[2] = static_cast<int8_t>(s45 & 0xFF);
    p.scale[3] = static_cast<int8_t>(s45 >> 8);
    p.d = pieces_detail::half_bits_to_f32(pieces_detail::ldg_u16(block + offsetof(Block, d)));
  }
};

// Q2_K: value 128 k + 32 j + l is bits 2 j, 2 j + 1 of qs[32 k + l]; group g (16 values)
// has scale scales[g] & 15 and minimum scales[g] >> 4. Part c: k = c / 2, j = 2 (c % 2)
// (run 0) and 2 (c % 2) + 1 (run 1), groups 8 k + 4 (c % 2) .. + 3. The block's value:
// x.d d float(sumi) - x.d dmin float(summ), summ over the groups' activation sums.
struct Q2_K : FormatK {
  using Block = quant::BlockQ2_K;
  static constexpr int kAlign = 4;
  __device__ static int x_offset(int c, int run) { return 128 * (c / 2) + 64 * (c % 2) + 32 * run; }
  __device__ static void load(const uint8_t* block, int c, const uint8_t*, Part& p) {
    const int k = c / 2, m = c % 2;
    const auto* qs = reinterpret_cast<const uint32_t*>(block + offsetof(Block, qs) + 32 * k);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t q = __ldg(qs + i);
      p.w[i] = static_cast<int32_t>((q >> (4 * m)) & 0x03030303u);
      p.w[8 + i] = static_cast<int32_t>((q >> (4 * m + 2)) & 0x03030303u);
    }
    const uint32_t scales = __ldg(reinterpret_cast<const uint32_t*>(block + offsetof(Block, scales) + 8 * k + 4 * m));
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      p.scale[g] = static_cast<int>((scales >> (8 * g)) & 15u);
      p.min[g] = static_cast<int>((scales >> (8 * g + 4)) & 15u);
    }
    const uint32_t d = __ldg(reinterpret_cast<const uint32_t*>(block + offsetof(Block, d)));
    p.d = pieces_detail::half_bits_to_f32(d);
    p.m = pieces_detail::half_bits_to_f32(d >> 16);
  }
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars& xs, int& sumi, int& summ) {
    sumi = 0;
    summ = 0;
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      sumi += p.scale[g] * dot_words(p.w + 4 * g, x + 4 * g, 4, 0);
      summ += p.min[g] * xs.sum[g];
    }
  }
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int summ) {
    return __fsub_rn(__fmul_rn(__fmul_rn(xs.d, p.d), static_cast<float>(sumi)),
                     __fmul_rn(__fmul_rn(xs.d, p.m), static_cast<float>(summ)));
  }
};

// Q3_K: value 128 k + 32 j + l has low bits 2 j, 2 j + 1 of qs[32 k + l], minus 4 unless
// bit 4 k + j of hmask[l] is set; group g has scale (6 bits of the packed 12) - 32. Part
// c: k = c / 2, j = 2 (c % 2) + run, groups 8 k + 4 (c % 2) .. + 3. The block's value:
// d x.d float(sumi). 110-byte blocks: 2-byte alignment.
struct Q3_K : FormatK, ScalesPer16, ScaledValue {
  using Block = quant::BlockQ3_K;
  static constexpr int kAlign = 2;
  __device__ static int x_offset(int c, int run) { return 128 * (c / 2) + 64 * (c % 2) + 32 * run; }
  __device__ static void load(const uint8_t* block, int c, const uint8_t* end, Part& p) {
    const int k = c / 2, m = c % 2;
    uint32_t qs[8], hmask[8], packed[3];
    load_words<8>(block + offsetof(Block, qs) + 32 * k, end, qs);
    load_words<8>(block + offsetof(Block, hmask), end, hmask);
    load_words<3>(block + offsetof(Block, scales), end, packed);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
      for (int run = 0; run < 2; ++run) {
        const int j = 2 * m + run;
        const uint32_t low = (qs[i] >> (2 * j)) & 0x03030303u, high = (hmask[i] >> (4 * k + j)) & 0x01010101u;
        p.w[8 * run + i] = static_cast<int32_t>(__vsub4(low | (high << 2), 0x04040404u));  // bytewise, in [-4, 3]
      }
    }
    // dot_scales::unpack_q3_K's word 2 k + m: scales 8 k + 4 m .. + 3.
    const int o = 2 * k + m;
    const uint32_t scales = (((o & 1 ? packed[1] : packed[0]) >> (4 * (o >> 1))) & 0x0F0F0F0Fu) |
                            (((packed[2] >> (2 * o)) & 0x03030303u) << 4);
#pragma unroll
    for (int g = 0; g < 4; ++g) p.scale[g] = static_cast<int>((scales >> (8 * g)) & 0xFFu) - 32;
    p.d = pieces_detail::half_bits_to_f32(pieces_detail::ldg_u16(block + offsetof(Block, d)));
  }
};

// IQ4_XS: sub-block s (32 values) has the indices qs[16 s .. 16 s + 15] (low nibbles its
// values 0..15, high ones 16..31) into the IQ4_NL codebook and the scale ls - 32, ls
// nibble s of scales_l and bits 2 s, 2 s + 1 of scales_h. Part c: sub-blocks 2 c, 2 c + 1.
// The block's value: d x.d float(sumi). 136-byte blocks: 8-byte alignment.
struct IQ4_XS : FormatK, ScaledValue {
  using Block = quant::BlockIQ4_XS;
  static constexpr int kAlign = 8;
  __device__ static int x_offset(int c, int run) { return 64 * c + 32 * run; }
  __device__ static void load(const uint8_t* block, int c, const uint8_t*, Part& p) {
    const uint2 head = __ldg(reinterpret_cast<const uint2*>(block));  // d, scales_h; scales_l
    const auto* qs = reinterpret_cast<const uint2*>(block + offsetof(Block, qs) + 32 * c);
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const uint2 q = __ldg(qs + h);
      const int run = h / 2, i = 2 * (h % 2);
      p.w[8 * run + i] = codebook_values(q.x & 0x0F0F0F0Fu);
      p.w[8 * run + i + 1] = codebook_values(q.y & 0x0F0F0F0Fu);
      p.w[8 * run + 4 + i] = codebook_values((q.x >> 4) & 0x0F0F0F0Fu);
      p.w[8 * run + 4 + i + 1] = codebook_values((q.y >> 4) & 0x0F0F0F0Fu);
    }
    const uint32_t scales_h = head.x >> 16;
#pragma unroll
    for (int run = 0; run < 2; ++run) {
      const int s = 2 * c + run;
      const int low = static_cast<int>((head.y >> (4 * s)) & 0xFu), high = static_cast<int>((scales_h >> (2 * s)) & 3u);
      p.scale[run] = (low | (high << 4)) - 32;
    }
    p.d = pieces_detail::half_bits_to_f32(head.x);
  }
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars&, int& sumi, int& summ) {
    sumi = p.scale[0] * dot_words(p.w, x, 8, 0) + p.scale[1] * dot_words(p.w + 8, x + 8, 8, 0);
    summ = 0;
  }
};

// Calls fn(F{}) with the integer format of `type`; false where it has none.
template <typename Fn>
inline bool visit_int8_format(DType type, Fn&& fn) {
    switch (type) {
    case DType::Q8_0: fn(Q8_0{}); return true;
    case DType::Q4_0: fn(Q4_0{}); return true;
    case DType::Q4_1: fn(Q4_1{}); return true;
    case DType::Q5_0: fn(Q5_0{}); return true;
    case DType::Q5_1: fn(Q5_1{}); return true;
    case DType::IQ4_NL: fn(IQ4_NL{}); return true;
    case DType::Q2_K: fn(Q2_K{}); return true;
    case DType::Q3_K: fn(Q3_K{}); return true;
    case DType::Q4_K: fn(Q4_K{}); return true;
    case DType::Q5_K: fn(Q5_K{}); return true;
    case DType::Q6_K: fn(Q6_K{}); return true;
    case DType::IQ4_XS: fn(IQ4_XS{}); return true;
    default: return false;
  }
}

}  // namespace pagoda::backend::cuda::int8_formats
