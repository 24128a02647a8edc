// dequantize_row: dispatch, plus the plain types and the 32-wide block formats.
// Every value is computed with the same float operations, in the same order, as the
// reference dequantizers, so results are bit-identical (not merely close).

#include "quant/dequantize.h"

#include <string>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize_formats.h"
#include "quant/row_checks.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {
namespace {

DequantizeBlocksFn find_dequantizer(DType type) {
  switch (type) {
    case DType::F32: return dequantize_f32;
    case DType::F16: return dequantize_f16;
    case DType::BF16: return dequantize_bf16;
    case DType::Q4_0: return dequantize_q4_0;
    case DType::Q4_1: return dequantize_q4_1;
    case DType::Q5_0: return dequantize_q5_0;
    case DType::Q5_1: return dequantize_q5_1;
    case DType::Q8_0: return dequantize_q8_0;
    case DType::Q2_K: return dequantize_q2_k;
    case DType::Q3_K: return dequantize_q3_k;
    case DType::Q4_K: return dequantize_q4_k;
    case DType::Q5_K: return dequantize_q5_k;
    case DType::Q6_K: return dequantize_q6_k;
    case DType::Q8_K: return dequantize_q8_k;
    case DType::IQ4_NL: return dequantize_iq4_nl;
    case DType::IQ4_XS: return dequantize_iq4_xs;
    default: return nullptr;
  }
}

// The 5th bit of value j (0..31) of a Q5_0 / Q5_1 block, already shifted to bit 4.
inline int q5_high_bit(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }

}  // namespace

bool can_dequantize(DType type) { return find_dequantizer(type) != nullptr; }

Status dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const DequantizeBlocksFn dequantize = find_dequantizer(type);
  if (dequantize == nullptr) {
    return unsupported("dequantize: " + describe_type(type) + " has no dequantizer");
  }
  PAGODA_TRY(check_row_args("dequantize", type, src, dst, n));
  if (n == 0) return Status::ok_status();
  dequantize(static_cast<const uint8_t*>(src), n / traits(type).block_size, dst);
  return Status::ok_status();
}

void dequantize_f32(const uint8_t* src, int64_t n_blocks, float* dst) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * sizeof(float));
}

void dequantize_f16(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) dst[i] = fp16_to_f32(load_block<uint16_t>(src, i));
}

void dequantize_bf16(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) dst[i] = bf16_to_f32(load_block<uint16_t>(src, i));
}

// Q4_0: value = (nibble - 8) * d. Byte j holds values j (low nibble) and j + 16 (high).
void dequantize_q4_0(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto block = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_f32(block.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((block.qs[j] & 0x0F) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
    }
  }
}

// Q4_1: value = nibble * d + m.
void dequantize_q4_1(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto block = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_f32(block.d);
    const float m = fp16_to_f32(block.m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(block.qs[j] & 0x0F) * d + m;
      dst[j + kQK / 2] = static_cast<float>(block.qs[j] >> 4) * d + m;
    }
  }
}

// Q5_0: value = (5-bit q - 16) * d; the fifth bits come from the 32-bit mask qh.
void dequantize_q5_0(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto block = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_f32(block.d);
    uint32_t qh;
    std::memcpy(&qh, block.qh, sizeof qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = ((block.qs[j] & 0x0F) | q5_high_bit(qh, j)) - 16;
      const int q1 = ((block.qs[j] >> 4) | q5_high_bit(qh, j + kQK / 2)) - 16;
      dst[j] = static_cast<float>(q0) * d;
      dst[j + kQK / 2] = static_cast<float>(q1) * d;
    }
  }
}

// Q5_1: value = 5-bit q * d + m.
void dequantize_q5_1(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto block = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_f32(block.d);
    const float m = fp16_to_f32(block.m);
    uint32_t qh;
    std::memcpy(&qh, block.qh, sizeof qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = (block.qs[j] & 0x0F) | q5_high_bit(qh, j);
      const int q1 = (block.qs[j] >> 4) | q5_high_bit(qh, j + kQK / 2);
      dst[j] = static_cast<float>(q0) * d + m;
      dst[j + kQK / 2] = static_cast<float>(q1) * d + m;
    }
  }
}

// Q8_0: value = q * d.
void dequantize_q8_0(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto block = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_f32(block.d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(block.qs[j]) * d;
  }
}

}  // namespace pagoda::quant
