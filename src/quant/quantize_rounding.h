#pragma once
// The float-to-integer conversions the block formats are defined with. Byte-exactness
// depends on which one each step uses: the k- and i-quants round to nearest with ties
// to even (nearest_int); the 32-wide formats add 0.5 or 8.5 and truncate as a C cast.

#include <cstdint>
#include <cstring>

namespace pagoda::quant {

// Round to nearest, ties to even, by adding 1.5 * 2^23: the float adder then leaves
// round(v) in the low mantissa bits. Exact for |v| < 2^22; beyond that (or for NaN) the
// result is an arbitrary int in [-2^22, 2^22), which callers clamp. Never undefined.
inline int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

// A C cast of float to int (truncation toward zero), defined for every input: NaN and
// values outside int's range give INT32_MIN, as the x86 conversion instruction does.
inline int truncate_to_int(float v) {
  if (v > -2147483904.0f && v < 2147483648.0f) return static_cast<int>(v);
  return INT32_MIN;
}

}  // namespace pagoda::quant
