#pragma once
// A small unsigned integer less a constant as a float, without an integer-to-float
// conversion (which the multiprocessor issues at a fraction of the rate of the two
// instructions used instead): the float whose bits are 2^23's with q in the low mantissa
// bits is 2^23 + q exactly, and subtracting 2^23 + offset from it is exact, so the result
// is static_cast<float>(int(q) - offset) for 0 <= q < 2^23 and 0 <= offset <= 2^23. The
// quantized piece decoders (quant_pieces.cuh) turn their 4-, 6- and 8-bit values into
// floats with it; host and device code alike, so tests/backend/cuda/small_int_float_test
// checks the identity on the host.

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define PAGODA_SMALL_INT_HD __host__ __device__
#else
#define PAGODA_SMALL_INT_HD
#endif

namespace pagoda::backend::cuda {

template <int kOffset>
PAGODA_SMALL_INT_HD inline float small_int_to_f32(uint32_t q) {
  static_assert(kOffset >= 0 && kOffset <= (1 << 23), "offset within the exact range");
  constexpr float kBias = 8388608.0f + static_cast<float>(kOffset);  // 2^23 + offset, exact
#if defined(__CUDA_ARCH__)
  return __fsub_rn(__uint_as_float(0x4B000000u | q), kBias);
#else
  const uint32_t bits = 0x4B000000u | q;
  float shifted;
  std::memcpy(&shifted, &bits, sizeof(shifted));
  return shifted - kBias;
#endif
}

}  // namespace pagoda::backend::cuda

#undef PAGODA_SMALL_INT_HD
