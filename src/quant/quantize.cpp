// quantize_row: dispatch, plus the plain types and the 32-wide block formats. The
// quantizers reproduce the reference ones byte for byte: same scale choice, same float
// operations in the same order, same conversions (fp16 rounding to nearest even, and
// "add 0.5 (or 8.5, 16.5) then truncate" for the quants).

#include "quant/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize_formats.h"
#include "quant/quantize_rounding.h"
#include "quant/row_checks.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {
namespace {

// The 8-bit formats come from the activation quantizers of quantize.h, which write
// aligned blocks; going through a local block keeps `dst` free of alignment needs.
void quantize_q8_0_blocks(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    BlockQ8_0 block;
    quantize_row_q8_0(src + i * kQK, &block, kQK);
    store_block(block, dst, i);
  }
}
void quantize_q8_k_blocks(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    BlockQ8_K block;
    quantize_row_q8_K(src + i * kQK_K, &block, kQK_K);
    store_block(block, dst, i);
  }
}

QuantizeBlocksFn find_quantizer(DType type) {
  switch (type) {
    case DType::F32: return quantize_f32;
    case DType::F16: return quantize_f16;
    case DType::BF16: return quantize_bf16;
    case DType::Q4_0: return quantize_q4_0;
    case DType::Q4_1: return quantize_q4_1;
    case DType::Q5_0: return quantize_q5_0;
    case DType::Q5_1: return quantize_q5_1;
    case DType::Q8_0: return quantize_q8_0_blocks;
    case DType::Q2_K: return quantize_q2_k;
    case DType::Q3_K: return quantize_q3_k;
    case DType::Q4_K: return quantize_q4_k;
    case DType::Q5_K: return quantize_q5_k;
    case DType::Q6_K: return quantize_q6_k;
    case DType::Q8_K: return quantize_q8_k_blocks;
    case DType::IQ4_NL: return quantize_iq4_nl;
    case DType::IQ4_XS: return quantize_iq4_xs;
    default: return nullptr;
  }
}

// The value of largest magnitude in x[0..n) (the first one on ties), or 0 if all are 0.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

struct Range {
  float min, max;
};
inline Range value_range(const float* x, int n) {
  Range r{FLT_MAX, -FLT_MAX};
  for (int j = 0; j < n; ++j) {
    if (x[j] < r.min) r.min = x[j];
    if (x[j] > r.max) r.max = x[j];
  }
  return r;
}

// The quant of a value already scaled into [-bias, top] (or [0, top]): C's
// `min(top, (int8_t)(v + offset))`, made defined for every float.
inline uint8_t biased_quant(float v, float offset, int top) {
  const auto truncated = static_cast<int8_t>(truncate_to_int(v + offset));
  return static_cast<uint8_t>(std::min(top, static_cast<int>(truncated)));
}

// Sets bit j of the 32-bit Q5 high-bit mask from the fifth bit of quant q.
inline void set_q5_high_bit(uint32_t& qh, uint8_t q, int j) { qh |= ((q & 0x10u) >> 4) << j; }

}  // namespace

bool can_quantize(DType type) { return find_quantizer(type) != nullptr; }

Status quantize_row(DType type, const float* src, void* dst, int64_t n) {
  const QuantizeBlocksFn quantize = find_quantizer(type);
  if (quantize == nullptr) {
    return unsupported("quantize: " + describe_type(type) + " has no quantizer");
  }
  PAGODA_TRY(check_row_args("quantize", type, src, dst, n));
  if (n == 0) return Status::ok_status();
  quantize(src, n / traits(type).block_size, static_cast<uint8_t*>(dst));
  return Status::ok_status();
}

void quantize_f32(const float* src, int64_t n_blocks, uint8_t* dst) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * sizeof(float));
}

void quantize_f16(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) store_block(f32_to_fp16(src[i]), dst, i);
}

void quantize_bf16(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) store_block(f32_to_bf16(src[i]), dst, i);
}

// Q4_0: d = max / -8 for the value of largest magnitude, so that value maps to quant 0;
// q = min(15, trunc(x / d + 8.5)).
void quantize_q4_0(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    const float d = signed_absmax(src, kQK) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 block;
    block.d = f32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t q0 = biased_quant(src[j] * id, 8.5f, 15);
      const uint8_t q1 = biased_quant(src[j + kQK / 2] * id, 8.5f, 15);
      block.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(block, dst, i);
  }
}

// Q4_1: d = (max - min) / 15, m = min; q = min(15, trunc((x - min) / d + 0.5)).
void quantize_q4_1(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    const Range r = value_range(src, kQK);
    const float d = (r.max - r.min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 block;
    block.d = f32_to_fp16(d);
    block.m = f32_to_fp16(r.min);
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t q0 = biased_quant((src[j] - r.min) * id, 0.5f, 15);
      const uint8_t q1 = biased_quant((src[j + kQK / 2] - r.min) * id, 0.5f, 15);
      block.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(block, dst, i);
  }
}

// Q5_0: d = max / -16; q = min(31, trunc(x / d + 16.5)), fifth bits gathered in qh.
void quantize_q5_0(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    const float d = signed_absmax(src, kQK) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 block;
    block.d = f32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const uint8_t q0 = biased_quant(src[j] * id, 16.5f, 31);
      const uint8_t q1 = biased_quant(src[j + kQK / 2] * id, 16.5f, 31);
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      set_q5_high_bit(qh, q0, j);
      set_q5_high_bit(qh, q1, j + kQK / 2);
    }
    std::memcpy(block.qh, &qh, sizeof qh);
    store_block(block, dst, i);
  }
}

// Q5_1: d = (max - min) / 31, m = min; q = trunc((x - min) / d + 0.5) (at most 31).
void quantize_q5_1(const float* src, int64_t n_blocks, uint8_t* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    const Range r = value_range(src, kQK);
    const float d = (r.max - r.min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 block;
    block.d = f32_to_fp16(d);
    block.m = f32_to_fp16(r.min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      // The reference converts straight to uint8_t here, without a clamp.
      const auto q0 = static_cast<uint8_t>(truncate_to_int((src[j] - r.min) * id + 0.5f));
      const auto q1 = static_cast<uint8_t>(truncate_to_int((src[j + kQK / 2] - r.min) * id + 0.5f));
      block.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      set_q5_high_bit(qh, q0, j);
      set_q5_high_bit(qh, q1, j + kQK / 2);
    }
    std::memcpy(block.qh, &qh, sizeof qh);
    store_block(block, dst, i);
  }
}

}  // namespace pagoda::quant
