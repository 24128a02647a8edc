// Lookup tables shared by the dot kernels of every ISA. Data only, built at compile
// time: no code runs at start-up (code in an ISA file must not run before the CPU check).

#include <bit>
#include <cstdint>

#include "quant/dot_kernels.h"

namespace pagoda::quant {
namespace {

// IEEE half to float, bit by bit (the same rules as core/fp16.h, in a constexpr form).
constexpr float half_bits_to_float(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits = 0;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      uint32_t m = mantissa;
      while ((m & 0x400u) == 0) {
        m <<= 1;
        ++e;
      }
      bits = sign | static_cast<uint32_t>(112 - e) << 23 | (m & 0x3ffu) << 13;
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 112) << 23 | mantissa << 13;
  }
  return std::bit_cast<float>(bits);
}

constexpr HalfToFloatTable make_half_table() {
  HalfToFloatTable table{};
  for (uint32_t h = 0; h < 65536; ++h) table.values[h] = half_bits_to_float(h);
  return table;
}

}  // namespace

constinit const HalfToFloatTable kHalfToFloat = make_half_table();

}  // namespace pagoda::quant
