#pragma once
// Unpacking of the 6-bit sub-block scales of Q3_K, Q4_K and Q5_K, shared by the scalar
// and SIMD dot kernels. Functions are `static` (one private copy per file) so that code
// compiled for AVX-512 never stands in for the scalar copy (see dot_kernels.h).

#include <cstdint>
#include <cstring>

namespace pagoda::quant::dot_scales {

// Q4_K / Q5_K: 12 bytes hold 8 scales and 8 mins of 6 bits. Returns them as 16 bytes,
// out[0..7] = scales, out[8..15] = mins, each in [0, 63]:
//   j < 4: scale = b[j] & 63,                        min = b[j + 4] & 63
//   j >= 4: scale = (b[j + 4] & 15) | (b[j - 4] >> 6) << 4,
//           min   = (b[j + 4] >> 4) | (b[j] >> 6) << 4
static inline void unpack_q4_K(const uint8_t* packed, uint32_t out[4]) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  out[0] = w[0] & kLow6;                                        // scales 0..3
  out[1] = (w[2] & kLow4) | (((w[0] >> 6) & kLow2) << 4);       // scales 4..7
  out[2] = w[1] & kLow6;                                        // mins 0..3
  out[3] = ((w[2] >> 4) & kLow4) | (((w[1] >> 6) & kLow2) << 4);  // mins 4..7
}

// Q3_K: 12 bytes hold 16 scales of 6 bits: the low 4 bits in bytes 0..7 (scales 0..7 in
// the low nibbles, 8..15 in the high ones), the high 2 bits in bytes 8..11 (scale j in
// byte 8 + j % 4, bits 2 * (j / 4)). Returns 16 bytes of scales, still offset by 32.
static inline void unpack_q3_K(const uint8_t* packed, uint32_t out[4]) {
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t w[3];
  std::memcpy(w, packed, 12);
  out[0] = (w[0] & kLow4) | (((w[2] >> 0) & kLow2) << 4);
  out[1] = (w[1] & kLow4) | (((w[2] >> 2) & kLow2) << 4);
  out[2] = ((w[0] >> 4) & kLow4) | (((w[2] >> 4) & kLow2) << 4);
  out[3] = ((w[1] >> 4) & kLow4) | (((w[2] >> 6) & kLow2) << 4);
}

// IQ4_XS: the 6-bit scale of sub-block j (0..7), offset by 32.
static inline int iq4_xs_scale(const uint8_t* scales_l, uint16_t scales_h, int j) {
  const int low = (scales_l[j / 2] >> (4 * (j % 2))) & 0xf;
  const int high = (scales_h >> (2 * j)) & 3;
  return low | (high << 4);
}

}  // namespace pagoda::quant::dot_scales
