// Dequantizers of the k-quants: 256-value super-blocks whose sub-blocks carry small
// integer scales (and mins) that are themselves scaled by the half-precision d (dmin).
// Float operations follow the reference order exactly: the sub-block factors d * scale
// and dmin * min are rounded first, then value = factor * q - min_factor.

#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize_formats.h"
#include "quant/kquant_packing.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {

// Q2_K: 16 groups of 16 values; 2-bit quants. Byte l of each 32-byte run of qs holds
// four values, 32 apart, in bit pairs 0-1, 2-3, 4-5, 6-7.
void dequantize_q2_k(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_f32(block.d);
    const float dmin = fp16_to_f32(block.dmin);
    int group = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = block.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part, ++group) {  // groups of values 0..15, 16..31
          const uint8_t sc = block.scales[group];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *dst++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

// Q3_K: 16 groups of 16 values; 2 low bits in qs (laid out as Q2_K) and a high bit in
// hmask (bit k of byte l: value 32 * k + l). q = low | high << 2, value = d * scale * (q - 4).
void dequantize_q3_k(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockQ3_K>(src, i);
    const float d_all = fp16_to_f32(block.d);
    int group = 0;
    uint8_t high_mask = 1;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = block.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2, high_mask <<= 1) {
        for (int part = 0; part < 2; ++part, ++group) {
          const float dl = d_all * static_cast<float>(unpack_scale_q3_k(group, block.scales));
          for (int l = 0; l < 16; ++l) {
            const int low = (q[l + 16 * part] >> shift) & 3;
            const int offset = (block.hmask[l + 16 * part] & high_mask) ? 0 : 4;
            *dst++ = dl * static_cast<float>(low - offset);
          }
        }
      }
    }
  }
}

// Q4_K: 8 sub-blocks of 32 values with 6-bit scales and mins. Each 32-byte run of qs
// holds two sub-blocks: low nibbles the first, high nibbles the second.
void dequantize_q4_k(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockQ4_K>(src, i);
    const float d = fp16_to_f32(block.d);
    const float dmin = fp16_to_f32(block.dmin);
    for (int sub = 0; sub < 8; ++sub) {
      const ScaleMin sm = unpack_scale_min_k4(sub, block.scales);
      const float dl = d * static_cast<float>(sm.scale);
      const float ml = dmin * static_cast<float>(sm.min);
      const uint8_t* q = block.qs + 32 * (sub / 2);
      const int shift = 4 * (sub % 2);
      for (int l = 0; l < 32; ++l) *dst++ = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
    }
  }
}

// Q5_K: Q4_K plus a fifth bit per value: bit `sub` of qh[l] belongs to value l of sub-block sub.
void dequantize_q5_k(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockQ5_K>(src, i);
    const float d = fp16_to_f32(block.d);
    const float dmin = fp16_to_f32(block.dmin);
    for (int sub = 0; sub < 8; ++sub) {
      const ScaleMin sm = unpack_scale_min_k4(sub, block.scales);
      const float dl = d * static_cast<float>(sm.scale);
      const float ml = dmin * static_cast<float>(sm.min);
      const uint8_t* q = block.qs + 32 * (sub / 2);
      const int shift = 4 * (sub % 2);
      for (int l = 0; l < 32; ++l) {
        const int high = (block.qh[l] >> sub) & 1 ? 16 : 0;
        *dst++ = dl * static_cast<float>(((q[l] >> shift) & 0xF) + high) - ml;
      }
    }
  }
}

// Q6_K: 16 groups of 16 values with signed 8-bit scales; 6-bit quants biased by 32.
// Per 128 values: ql[0..63] give low nibbles, qh[0..31] the top two bits, four values each.
void dequantize_q6_k(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_f32(block.d);
    for (int half = 0; half < 2; ++half, dst += 128) {
      const uint8_t* ql = block.ql + 64 * half;
      const uint8_t* qh = block.qh + 32 * half;
      const int8_t* sc = block.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int g = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[g]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[g + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[g + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[g + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// Q8_K: value = q * d, with d a full float.
void dequantize_q8_k(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockQ8_K>(src, i);
    for (int j = 0; j < kQK_K; ++j) *dst++ = block.d * static_cast<float>(block.qs[j]);
  }
}

}  // namespace pagoda::quant
