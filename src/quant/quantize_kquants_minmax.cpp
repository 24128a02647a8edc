// Reference quantizers of the k-quants with a scale and a min per sub-block (Q2_K,
// Q4_K, Q5_K): value ~ d * scale_j * q - dmin * min_j. Each sub-block's scale and min
// come from make_qkx2_quants; they are then quantized against the block maxima, and
// the quants are re-derived from the scales as stored, so they match what a reader
// reconstructs.

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

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// Q4_K / Q5_K: the scale search of the 8 sub-blocks of 32, the 6-bit packing of their
// scales and mins, and the final quants (0..nmax) in L.
struct KQuantHeader {
  half d, dmin;
  uint8_t scales[kKScaleBytes];
};
KQuantHeader quantize_k4_sub_blocks(const float* x, int nmax, float rmin, int nstep, uint8_t* L) {
  float scales[8], mins[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    const AffineFit fit = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, rmin, 0.1f, nstep, false);
    scales[j] = fit.scale;
    mins[j] = fit.min;
    if (fit.scale > max_scale) max_scale = fit.scale;
    if (fit.min > max_min) max_min = fit.min;
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    // The reference stores nearest_int into a uint8_t before clamping: keep that wrap.
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  KQuantHeader h;
  pack_scale_min_k4(ls, lm, h.scales);
  h.d = f32_to_fp16(max_scale / 63.f);
  h.dmin = f32_to_fp16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = unpack_scale_min_k4(j, h.scales);
    const float d = fp16_to_f32(h.d) * static_cast<float>(sm.scale);
    if (d == 0.0f) continue;
    const float dm = fp16_to_f32(h.dmin) * static_cast<float>(sm.min);
    for (int ii = 0; ii < 32; ++ii) {
      L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
  }
  return h;
}

}  // namespace

// Q2_K: 16 groups of 16, 2-bit quants, 4-bit scales and mins against d and dmin.
void quantize_q2_k(const float* src, int64_t n_blocks, uint8_t* dst) {
  constexpr float kScaleMax = 15.f;  // largest 4-bit scale / min
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK_K) {
    uint8_t L[kQK_K];
    float scales[16], mins[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      float weights[16];
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(src[16 * j + l]);
      const AffineFit fit = make_qkx2_quants(16, 3, src + 16 * j, weights, L + 16 * j, -0.5f, 0.1f, 15, true);
      scales[j] = fit.scale;
      mins[j] = fit.min;
      if (fit.scale > max_scale) max_scale = fit.scale;
      if (fit.min > max_min) max_min = fit.min;
    }
    BlockQ2_K block;
    std::memset(block.scales, 0, sizeof block.scales);
    block.d = f32_to_fp16(0.f);
    block.dmin = f32_to_fp16(0.f);
    if (max_scale > 0) {
      const float iscale = kScaleMax / max_scale;
      for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      block.d = f32_to_fp16(max_scale / kScaleMax);
    }
    if (max_min > 0) {
      const float iscale = kScaleMax / max_min;
      for (int j = 0; j < 16; ++j) {
        block.scales[j] = static_cast<uint8_t>(block.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      block.dmin = f32_to_fp16(max_min / kScaleMax);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = fp16_to_f32(block.d) * static_cast<float>(block.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = fp16_to_f32(block.dmin) * static_cast<float>(block.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((src[16 * j + ii] + dm) / d), 0, 3));
      }
    }
    pack_2bit_quants(L, block.qs);
    store_block(block, dst, i);
  }
}

// Q4_K: 8 sub-blocks of 32, 4-bit quants; qs run r holds sub-block 2r in its low
// nibbles and 2r + 1 in its high nibbles.
void quantize_q4_k(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK_K) {
    uint8_t L[kQK_K];
    const KQuantHeader h = quantize_k4_sub_blocks(src, 15, -1.f, 20, L);
    BlockQ4_K block;
    block.d = h.d;
    block.dmin = h.dmin;
    std::memcpy(block.scales, h.scales, sizeof block.scales);
    for (int r = 0; r < 4; ++r) {
      for (int l = 0; l < 32; ++l) {
        block.qs[32 * r + l] = static_cast<uint8_t>(L[64 * r + l] | (L[64 * r + l + 32] << 4));
      }
    }
    store_block(block, dst, i);
  }
}

// Q5_K: Q4_K's layout for the low 4 bits; bit j of qh[l] is the fifth bit of value l of
// sub-block j.
void quantize_q5_k(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK_K) {
    uint8_t L[kQK_K];
    const KQuantHeader h = quantize_k4_sub_blocks(src, 31, -0.5f, 15, L);
    BlockQ5_K block;
    block.d = h.d;
    block.dmin = h.dmin;
    std::memcpy(block.scales, h.scales, sizeof block.scales);
    std::memset(block.qh, 0, sizeof block.qh);
    for (int r = 0; r < 4; ++r) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * r + l], hi = L[64 * r + l + 32];
        block.qs[32 * r + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        block.qh[l] = static_cast<uint8_t>(block.qh[l] | ((lo >> 4) << (2 * r)) | ((hi >> 4) << (2 * r + 1)));
      }
    }
    store_block(block, dst, i);
  }
}

}  // namespace pagoda::quant
