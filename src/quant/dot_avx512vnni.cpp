// AVX-512 VNNI dot products of Q4_0, Q8_0 and IQ4_NL with Q8_0 activations: the
// kernels of dot_blocks_avx512.h, built here with -mavx512vnni so that every byte dot
// product is a single vpdpbusd (no int16 intermediate).

#include "quant/dot_blocks_avx512.h"
#include "quant/dot_kernels.h"

#if !defined(__AVX512VNNI__)
#error "dot_avx512vnni.cpp must be compiled with -mavx512vnni"
#endif

namespace pagoda::quant::avx512vnni {

float dot_q4_0(int64_t n, const void* w, const void* a) {
  return simd512::dot_scaled_blocks<BlockQ4_0>(n, w, a);
}
float dot_q8_0(int64_t n, const void* w, const void* a) {
  return simd512::dot_scaled_blocks<BlockQ8_0>(n, w, a);
}
float dot_iq4_nl(int64_t n, const void* w, const void* a) {
  return simd512::dot_scaled_blocks<BlockIQ4_NL>(n, w, a);
}

}  // namespace pagoda::quant::avx512vnni
