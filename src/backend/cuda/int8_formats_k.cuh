#pragma once
// The k-quants Q4_K, Q5_K and Q6_K for the few-token integer kernel (see
// int8_formats.cuh): Q8_K activations, four parts of 64 values a 256-value block.

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
    summ = p.min[0] * xs.sum[0] + p.min[1] * xs.sum[1];
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
struct Q6_K : FormatK {
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
  __device__ static void sums(const Part& p, const int32_t (&x)[kPartWords], const XScalars&, int& sumi, int& summ) {
    sumi = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) sumi += p.scale[k] * dot_words(p.w + 4 * k, x + 4 * k, 4, 0);
    summ = 0;
  }
  __device__ static float value(const Part& p, const XScalars& xs, int sumi, int) {
    return __fmul_rn(__fmul_rn(p.d, xs.d), static_cast<float>(sumi));
  }
};

}  // namespace pagoda::backend::cuda::int8_formats
