#pragma once
// The values of one block of a 32-value format as 32 bytes, for the strip kernels
// (matmul_strips_q32_*.cpp); include from *_avx2.cpp and *_avx512vnni.cpp files only.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/matmul/matmul_strip_avx2.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

// Values of one block as 32 bytes: signed for the symmetric formats, unsigned (0..31)
// for the ones with a minimum.
struct Q8_0Values {
  using Block = quant::BlockQ8_0;
  static __m256i values(const Block& b) { return load256(b.qs); }
};
// Q4_0 / Q5_0 as stored: 0..15 / 0..31, the offset of 8 / 16 comes off per block.
struct Q4_0Values {
  using Block = quant::BlockQ4_0;
  static constexpr int kOffset = 8;
  static __m256i values(const Block& b) { return unpack_nibbles(b.qs); }
};
struct Q5_0Values {
  using Block = quant::BlockQ5_0;
  static constexpr int kOffset = 16;
  static __m256i values(const Block& b) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof(qh));
    return _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bytes_from_bits(qh), _mm256_set1_epi8(0x10)));
  }
};
struct IQ4_NLValues {
  using Block = quant::BlockIQ4_NL;
  static __m256i values(const Block& b) {
    const __m128i table = load128(quant::kIQ4NLValues);
    return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), unpack_nibbles(b.qs));
  }
};
struct Q4_1Values {
  using Block = quant::BlockQ4_1;
  static __m256i values(const Block& b) { return unpack_nibbles(b.qs); }
};
struct Q5_1Values {
  using Block = quant::BlockQ5_1;
  static __m256i values(const Block& b) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof(qh));
    return _mm256_or_si256(unpack_nibbles(b.qs), _mm256_and_si256(bytes_from_bits(qh), _mm256_set1_epi8(0x10)));
  }
};

}  // namespace
}  // namespace pagoda::backend::cpu::avx2
