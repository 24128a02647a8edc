#pragma once
// What the IQ4_XS strip kernels of both instruction sets share (matmul_strips_iq4xs_avx2.cpp,
// matmul_strips_iq4xs_avx512vnni.cpp); include from those files only (internal linkage).
//
// Their arithmetic, the same bits on both: per super-block, row and token the exact int32
// total sum_s (ls_s - 32) * sum_l value_l * a_l over the 8 sub-blocks of 32 values (value
// = the IQ4_NL codebook entry a nibble indexes), then acc = fma(float(total), d_w * d_a,
// acc), one super-block after the other. (The row-by-row dot product, which serves the
// reference numerics, adds the super-blocks in 16 f32 lanes instead.)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

// The 8 sub-block scales ls - 32 of a block (int32, sub-block s in lane s): ls is nibble s
// of scales_l (bits 4s..4s+3 of its 4 bytes read as one little-endian word) with bits
// 2s, 2s + 1 of scales_h above it.
inline __m256i iq4_xs_scales(const quant::BlockIQ4_XS& w) {
  int32_t low_bits;
  std::memcpy(&low_bits, w.scales_l, sizeof(low_bits));
  const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(low_bits), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                       _mm256_set1_epi32(0x0f));
  const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                        _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
}

// The codebook in each 128-bit half, as signed bytes (vpshufb on nibbles looks values up).
inline __m256i iq4_codebook() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIQ4NLValues)));
}

}  // namespace
}  // namespace pagoda::backend::cpu::avx2
