// AVX2 dot products of the float weight types (F32, F16 and BF16 weights, with
// activations of the same type): widen to f32, fused multiply-add into four
// accumulators of 8 lanes (32 values per iteration), one horizontal sum at the end.

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/dot_kernels.h"
#include "quant/dot_simd_avx2.h"

namespace pagoda::quant::avx2 {
namespace {

__m256 load_f32(const float* p) { return _mm256_loadu_ps(p); }
__m256 load_f16(const uint16_t* p) { return _mm256_cvtph_ps(simd::load128(p)); }
__m256 load_bf16(const uint16_t* p) {
  // A bfloat16 is the high half of the float with the same bits.
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(simd::load128(p)), 16));
}

float scalar_f32(float v) { return v; }
float scalar_f16(uint16_t h) { return simd::half_to_float(h); }
float scalar_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

template <typename T, __m256 (*load)(const T*), float (*widen)(T)>
float dot_widened(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const T*>(w);
  const auto* y = static_cast<const T*>(a);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load(x + i), load(y + i), acc0);
    acc1 = _mm256_fmadd_ps(load(x + i + 8), load(y + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load(x + i + 16), load(y + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load(x + i + 24), load(y + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load(x + i), load(y + i), acc0);
  float sum = simd::hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum += widen(x[i]) * widen(y[i]);
  return sum;
}

}  // namespace

float dot_f32(int64_t n, const void* w, const void* a) {
  return dot_widened<float, load_f32, scalar_f32>(n, w, a);
}
float dot_f16(int64_t n, const void* w, const void* a) {
  return dot_widened<uint16_t, load_f16, scalar_f16>(n, w, a);
}
float dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_widened<uint16_t, load_bf16, scalar_bf16>(n, w, a);
}

}  // namespace pagoda::quant::avx2
