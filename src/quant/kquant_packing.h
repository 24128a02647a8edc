#pragma once
// Bit layouts shared by the k-quant quantizers and dequantizers.
//
// The 12-byte packing of eight 6-bit scales and eight 6-bit mins used by Q4_K and Q5_K:
// bytes 0..3 hold scales 0..3 (low 6 bits) and the top 2 bits of scales 4..7; bytes 4..7
// hold mins 0..3 and the top 2 bits of mins 4..7; bytes 8..11 hold the low 4 bits of
// scale j (low nibble) and min j (high nibble) for j = 4..7.

#include <cstdint>

#include "quant/blocks.h"

namespace pagoda::quant {

struct ScaleMin {
  uint8_t scale;  // 0..63
  uint8_t min;    // 0..63
};

// Sub-block j (0..7) of a packed scales array.
inline ScaleMin unpack_scale_min_k4(int j, const uint8_t* packed) {
  if (j < 4) return {static_cast<uint8_t>(packed[j] & 63), static_cast<uint8_t>(packed[j + 4] & 63)};
  return {static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4))};
}

// Writes the eight (scale, min) pairs, each 0..63, into `packed` (all 12 bytes).
inline void pack_scale_min_k4(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = scales[j];
    packed[j + 4] = mins[j];
  }
  for (int j = 4; j < 8; ++j) {
    packed[j + 4] = static_cast<uint8_t>((scales[j] & 0xF) | ((mins[j] & 0xF) << 4));
    packed[j - 4] |= static_cast<uint8_t>((scales[j] >> 4) << 6);
    packed[j] |= static_cast<uint8_t>((mins[j] >> 4) << 6);
  }
}

// The sixteen 6-bit scales of Q3_K, stored biased by 32: the low nibbles of scales 0..7
// are the low nibbles of bytes 0..7, those of scales 8..15 the high nibbles; the top two
// bits of scale j sit at bits 2*(j/4) of byte 8 + j%4. Returns scale j in -32..31.
inline int unpack_scale_q3_k(int j, const uint8_t* packed) {
  const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Packs 256 quants of 2 bits (Q2_K, and the low bits of Q3_K): byte l of run r (32 bytes
// each) holds values 128 r + l, +32, +64, +96 in bit pairs 0-1, 2-3, 4-5, 6-7.
inline void pack_2bit_quants(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                           (L[j + l + 96] << 6));
    }
  }
}

}  // namespace pagoda::quant
