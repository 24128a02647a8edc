// Reference quantizers of the non-linear 4-bit formats (IQ4_NL, IQ4_XS). Each 4-bit
// index picks a codebook value (kIQ4NLValues); for every 32 values the scale is chosen
// by trying a few candidates and keeping the one of least x^2-weighted squared error.

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize_formats.h"
#include "quant/quantize_kquants_search.h"
#include "quant/quantize_rounding.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {
namespace {

constexpr int kCodebookSize = 16;
constexpr auto kCodebookMin = static_cast<float>(kIQ4NLValues[0]);  // -127

// Index of the codebook value nearest x (the lower one on ties), by bisection.
int nearest_codebook_index(float x) {
  const int8_t* v = kIQ4NLValues;
  if (x <= static_cast<float>(v[0])) return 0;
  if (x >= static_cast<float>(v[kCodebookSize - 1])) return kCodebookSize - 1;
  int lo = 0, hi = kCodebookSize - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < static_cast<float>(v[mid])) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - static_cast<float>(v[hi - 1]) < static_cast<float>(v[hi]) - x ? hi - 1 : hi;
}

// Weighted fit of one candidate inverse scale: sum w q x and sum w q^2 over the group.
struct CodebookFit {
  float sumqx = 0;
  float sumq2 = 0;
};
CodebookFit fit_codebook(const float* x, const float* weight, float inverse_scale) {
  CodebookFit f;
  for (int j = 0; j < 32; ++j) {
    const auto q = static_cast<float>(kIQ4NLValues[nearest_codebook_index(inverse_scale * x[j])]);
    f.sumqx += weight[j] * q * x[j];
    f.sumq2 += weight[j] * q * q;
  }
  return f;
}

// Candidate inverse scales (-127 + t) / max for t in [-kScaleTries, kScaleTries].
constexpr int kScaleTries = 7;

// The scale of one group of 32 values (weights x^2): first the least-squares scale for
// the indices that map the value of largest magnitude to +127, then whichever candidate
// fits better. An all-zero group gets scale 0.
float search_group_scale(const float* x) {
  float weight[32];
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    weight[j] = x[j] * x[j];
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  CodebookFit f = fit_codebook(x, weight, 1 / (-max / kCodebookMin));
  float d = f.sumq2 > 0 ? f.sumqx / f.sumq2 : 0.f;
  float best = d * f.sumqx;
  for (int t = -kScaleTries; t <= kScaleTries; ++t) {
    f = fit_codebook(x, weight, (static_cast<float>(t) + kCodebookMin) / max);
    if (f.sumq2 > 0 && f.sumqx * f.sumqx > best * f.sumq2) {
      d = f.sumqx / f.sumq2;
      best = d * f.sumqx;
    }
  }
  return d;
}

// Two 4-bit indices per byte: byte j of each 16 holds values j and j + 16 of its 32.
void pack_indices(const uint8_t* L, int n, uint8_t* qs) {
  for (int i = 0; i < n / 32; ++i) {
    for (int j = 0; j < 16; ++j) qs[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

}  // namespace

// IQ4_NL: one fp16 scale per 32 values, searched as for IQ4_XS, then the indices for
// that scale. (ggml's quantize_row_iq4_nl_ref tries a single candidate instead; model
// files, and the reference vectors, come from the full search, which is what this is.)
void quantize_iq4_nl(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    uint8_t L[kQK];
    const float d = search_group_scale(src);
    const float id = d != 0.0f ? 1 / d : 0.f;
    for (int j = 0; j < kQK; ++j) L[j] = static_cast<uint8_t>(nearest_codebook_index(id * src[j]));
    BlockIQ4_NL block;
    block.d = f32_to_fp16(d);
    pack_indices(L, kQK, block.qs);
    store_block(block, dst, i);
  }
}

// IQ4_XS: 8 groups of 32 with 6-bit scales (biased by 32) against one fp16 d; the
// indices are re-derived from each group's scale as stored.
void quantize_iq4_xs(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK_K) {
    uint8_t L[kQK_K];
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
      scales[ib] = search_group_scale(src + 32 * ib);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    BlockIQ4_XS block;
    const float d = -max_scale / 32;
    block.d = f32_to_fp16(d);
    block.scales_h = 0;
    const float id = d != 0.0f ? 1 / d : 0.f;
    for (int ib = 0; ib < 8; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = l < -32 ? -32 : (l > 31 ? 31 : l);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0.0f ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(nearest_codebook_index(idl * src[32 * ib + j]));
      l += 32;
      if (ib % 2 == 0) {
        block.scales_l[ib / 2] = static_cast<uint8_t>(l & 0xF);
      } else {
        block.scales_l[ib / 2] = static_cast<uint8_t>(block.scales_l[ib / 2] | ((l & 0xF) << 4));
      }
      block.scales_h = static_cast<uint16_t>(block.scales_h | ((l >> 4) << (2 * ib)));
    }
    pack_indices(L, kQK_K, block.qs);
    store_block(block, dst, i);
  }
}

}  // namespace pagoda::quant
