// Dequantizers of the non-linear 4-bit formats: each 4-bit index picks a value from the
// fixed codebook kIQ4NLValues, scaled per 32 values.

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize_formats.h"

// Each product must round on its own: no fused multiply-add.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::quant {
namespace {

// 32 values from 16 bytes of indices: low nibbles are values 0..15, high nibbles 16..31.
inline void decode_iq4_32(const uint8_t* qs, float scale, float* dst) {
  for (int j = 0; j < 16; ++j) {
    dst[j] = scale * static_cast<float>(kIQ4NLValues[qs[j] & 0xF]);
    dst[j + 16] = scale * static_cast<float>(kIQ4NLValues[qs[j] >> 4]);
  }
}

}  // namespace

// IQ4_NL: one half-precision scale per 32 values.
void dequantize_iq4_nl(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto block = load_block<BlockIQ4_NL>(src, i);
    decode_iq4_32(block.qs, fp16_to_f32(block.d), dst);
  }
}

// IQ4_XS: 256 values; sub-block b (of 32) has the 6-bit scale ls = low nibble b of
// scales_l | bits 2b..2b+1 of scales_h << 4, and its values are d * (ls - 32) * codebook.
void dequantize_iq4_xs(const uint8_t* src, int64_t n_blocks, float* dst) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto block = load_block<BlockIQ4_XS>(src, i);
    const float d = fp16_to_f32(block.d);
    for (int sub = 0; sub < kQK_K / 32; ++sub, dst += 32) {
      const int low = (block.scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF;
      const int high = (block.scales_h >> (2 * sub)) & 3;
      const float dl = d * static_cast<float>((low | (high << 4)) - 32);
      decode_iq4_32(block.qs + 16 * sub, dl, dst);
    }
  }
}

}  // namespace pagoda::quant
