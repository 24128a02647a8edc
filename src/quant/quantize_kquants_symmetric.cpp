// Reference quantizers of the k-quants with one signed scale per 16-value group (Q3_K,
// Q6_K): value ~ d * scale_j * (q - bias). The group scales come from a weighted search,
// are quantized against the largest, and the quants are re-derived from the scales as
// stored.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/kquant_packing.h"
#include "quant/quantize_formats.h"
#include "quant/quantize_kquants_search.h"
#include "quant/quantize_rounding.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {
namespace {

inline int clamp_int(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// The group scale of largest magnitude (the first on ties), sign kept.
float signed_max_scale(const float* scales, int n) {
  float max_scale = 0, amax = 0;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  return max_scale;
}

// Stores the 16 group scales of Q3_K as 6-bit values biased by 32 (see
// unpack_scale_q3_k) and sets d; quantized against the largest, which maps to -32.
void pack_q3_k_scales(const float* scales, BlockQ3_K& block) {
  std::memset(block.scales, 0, sizeof block.scales);
  const float max_scale = signed_max_scale(scales, 16);
  if (max_scale == 0.0f) {
    block.d = f32_to_fp16(0.f);
    return;
  }
  const float iscale = -32.f / max_scale;
  for (int j = 0; j < 16; ++j) {
    // The reference keeps nearest_int in an int8_t before clamping: keep that wrap.
    const auto q = static_cast<int8_t>(nearest_int(iscale * scales[j]));
    const int l = clamp_int(q, -32, 31) + 32;
    if (j < 8) {
      block.scales[j] = static_cast<uint8_t>(l & 0xF);
    } else {
      block.scales[j - 8] = static_cast<uint8_t>(block.scales[j - 8] | ((l & 0xF) << 4));
    }
    block.scales[8 + j % 4] = static_cast<uint8_t>(block.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
  }
  block.d = f32_to_fp16(1 / iscale);
}

}  // namespace

// Q3_K: 3-bit quants q in 0..7 (value d * scale * (q - 4)); low 2 bits in qs as Q2_K
// lays them out, the high bit of value j in bit j / 32 of hmask[j % 32].
void quantize_q3_k(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK_K) {
    int8_t L[kQK_K];
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = make_q3_quants(16, 4, src + 16 * j, L + 16 * j);
    BlockQ3_K block;
    pack_q3_k_scales(scales, block);
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_f32(block.d) * static_cast<float>(unpack_scale_q3_k(j, block.scales));
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + ii] / d), -4, 3) + 4);
      }
    }
    std::memset(block.hmask, 0, sizeof block.hmask);
    uint8_t low_bits[kQK_K];
    for (int j = 0; j < kQK_K; ++j) {
      int q = L[j];
      if (q > 3) {
        block.hmask[j % 32] = static_cast<uint8_t>(block.hmask[j % 32] | (1 << (j / 32)));
        q -= 4;
      }
      low_bits[j] = static_cast<uint8_t>(q);
    }
    pack_2bit_quants(low_bits, block.qs);
    store_block(block, dst, i);
  }
}

// Q6_K: 6-bit quants q in 0..63 (value d * scale * (q - 32)), signed 8-bit group
// scales. Per 128 values: ql[l] holds values l (low nibble) and l + 64 (high),
// ql[l + 32] values l + 32 and l + 96; qh[l] the top two bits of all four.
void quantize_q6_k(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK_K) {
    int8_t L[kQK_K];
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = make_qx_quants(16, 32, src + 16 * j, L + 16 * j);
    const float max_scale = signed_max_scale(scales, 16);
    BlockQ6_K block;
    std::memset(&block, 0, sizeof block);
    if (std::fabs(max_scale) < kGroupMaxEps) {  // an all-zero block: every byte 0
      store_block(block, dst, i);
      continue;
    }
    const float iscale = -128.f / max_scale;
    block.d = f32_to_fp16(1 / iscale);
    for (int j = 0; j < 16; ++j) {
      block.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_f32(block.d) * static_cast<float>(block.scales[j]);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + ii] / d), -32, 31) + 32);
      }
    }
    for (int half = 0; half < 2; ++half) {
      const int8_t* q = L + 128 * half;
      uint8_t* ql = block.ql + 64 * half;
      uint8_t* qh = block.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                     ((q[l + 96] >> 4) << 6));
      }
    }
    store_block(block, dst, i);
  }
}

}  // namespace pagoda::quant
