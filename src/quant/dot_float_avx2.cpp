// AVX2 dot products of the float weight types (F32, F16 and BF16 weights, with
// activations of the same type): widen to f32 and fused multiply-add into accumulators.
// F32 and F16 sum in the order of the reference CPU build's vector dot product (its
// AVX-512 form: 16 lanes a vector, each kept here as two 8-lane halves), so that matmuls
// round as it does: four 16-lane accumulators over 64 values an iteration, folded 0 + 2,
// 1 + 3, then 0 + 1 and summed across lanes; then the last n % 64 values one by one.
// F16: float products added in double. F32: added in float, in order, as the reference's
// compiled leftover loop does: vectorized 8 values at a time (the products rounded, then
// added lane by lane), the last n % 8 fused into the sum.
// BF16: four 8-lane accumulators, one horizontal sum at the end.

#include <immintrin.h>

#include <cmath>
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

// Sum of a 16-lane accumulator held as lanes [0, 8) and [8, 16): the halves added lane by
// lane, then the 8 lanes as hsum adds them.
float hsum16(__m256 low, __m256 high) { return simd::hsum(_mm256_add_ps(low, high)); }

// n a multiple of 64: four 16-lane accumulators, acc[j] (halves 2j, 2j + 1) taking values
// [16j, 16j + 16) of every 64, folded 0 + 2, 1 + 3, then 0 + 1.
template <typename T, __m256 (*load)(const T*)>
float dot_four_accumulators(int64_t n, const T* x, const T* y) {
  __m256 acc[8];
  for (__m256& v : acc) v = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 64) {
    for (int h = 0; h < 8; ++h) acc[h] = _mm256_fmadd_ps(load(x + i + 8 * h), load(y + i + 8 * h), acc[h]);
  }
  for (int h = 0; h < 4; ++h) acc[h] = _mm256_add_ps(acc[h], acc[h + 4]);
  acc[0] = _mm256_add_ps(acc[0], acc[2]);
  acc[1] = _mm256_add_ps(acc[1], acc[3]);
  return hsum16(acc[0], acc[1]);
}

}  // namespace

float dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const float*>(w);
  const auto* y = static_cast<const float*>(a);
  const int64_t n_vector = n / 64 * 64;
  float sum = dot_four_accumulators<float, load_f32>(n_vector, x, y);
  const int64_t n_grouped = n_vector + (n - n_vector) / 8 * 8;
  for (int64_t i = n_vector; i < n_grouped; i += 8) {
    // Rounded products kept apart from the additions, so that no compiler fuses them.
    alignas(32) float products[8];
    _mm256_store_ps(products, _mm256_mul_ps(load_f32(x + i), load_f32(y + i)));
    for (const float p : products) sum += p;
  }
  for (int64_t i = n_grouped; i < n; ++i) sum = std::fma(x[i], y[i], sum);
  return sum;
}
float dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint16_t*>(w);
  const auto* y = static_cast<const uint16_t*>(a);
  const int64_t n_vector = n / 64 * 64;
  double sum = dot_four_accumulators<uint16_t, load_f16>(n_vector, x, y);
  for (int64_t i = n_vector; i < n; ++i) sum += static_cast<double>(scalar_f16(x[i]) * scalar_f16(y[i]));
  return static_cast<float>(sum);
}
float dot_bf16(int64_t n, const void* w, const void* a) {
  return dot_widened<uint16_t, load_bf16, scalar_bf16>(n, w, a);
}

}  // namespace pagoda::quant::avx2
