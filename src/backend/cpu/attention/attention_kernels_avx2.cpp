// AVX2 + FMA + F16C versions of the attention helpers; same arithmetic as the scalar
// ones (vcvtps2ph rounds to nearest even, like the scalar conversion).

#include <immintrin.h>

#include "backend/cpu/attention/attention_kernels.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

inline __m256 load_half8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline void store_half8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline uint16_t to_half(float v) { return _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); }

float dot_f16(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t n_simd = n / 32 * 32;
  double sum = 0.0;
  if (n_simd > 0) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n_simd; i += 32) {
      for (int j = 0; j < 4; ++j) acc[j] = _mm256_fmadd_ps(load_half8(x + i + 8 * j), load_half8(y + i + 8 * j), acc[j]);
    }
    const __m256 folded = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
    const __m128 quarter = _mm_add_ps(_mm256_castps256_ps128(folded), _mm256_extractf128_ps(folded, 1));
    const __m128 pairs = _mm_hadd_ps(quarter, quarter);
    sum = static_cast<double>(_mm_cvtss_f32(_mm_hadd_ps(pairs, pairs)));
  }
  for (int64_t i = n_simd; i < n; ++i) sum += static_cast<double>(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
  return static_cast<float>(sum);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load_half8(x + i));
  for (; i < n; ++i) y[i] = _cvtsh_ss(x[i]);
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_half8(y + i, _mm256_loadu_ps(x + i));
  for (; i < n; ++i) y[i] = to_half(x[i]);
}

void mad_f16(uint16_t* y, const uint16_t* x, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_half8(y + i, _mm256_fmadd_ps(load_half8(x + i), vv, load_half8(y + i)));
  for (; i < n; ++i) y[i] = to_half(_mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(_cvtsh_ss(x[i])), _mm_set_ss(v), _mm_set_ss(_cvtsh_ss(y[i])))));
}

void scale_f16(uint16_t* y, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store_half8(y + i, _mm256_mul_ps(load_half8(y + i), vv));
  for (; i < n; ++i) y[i] = to_half(_cvtsh_ss(y[i]) * v);
}

void mad_f32(float* y, const float* x, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), vv, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(x[i]), _mm_set_ss(v), _mm_set_ss(y[i])));
}

void scale_f32(float* y, float v, int64_t n) {
  const __m256 vv = _mm256_set1_ps(v);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vv));
  for (; i < n; ++i) y[i] *= v;
}

// Rows [i, i + R) x columns [j, j + 8 * V) of C += A B, in registers across all of k.
template <int R, int V>
void gemm_block(float* c, const float* a, const float* b, int k_dim, int n_dim, int i, int j) {
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_loadu_ps(c + (i + r) * n_dim + j + 8 * v);
  for (int k = 0; k < k_dim; ++k) {
    __m256 bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_ps(b + k * n_dim + j + 8 * v);
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_set1_ps(a[(i + r) * k_dim + k]);
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(c + (i + r) * n_dim + j + 8 * v, acc[r][v]);
}

template <int R>
void gemm_rows(float* c, const float* a, const float* b, int k_dim, int n_dim, int i) {
  int j = 0;
  for (; j + 16 <= n_dim; j += 16) gemm_block<R, 2>(c, a, b, k_dim, n_dim, i, j);
  for (; j + 8 <= n_dim; j += 8) gemm_block<R, 1>(c, a, b, k_dim, n_dim, i, j);
  for (; j < n_dim; ++j) {
    for (int r = 0; r < R; ++r) {
      float acc = c[(i + r) * n_dim + j];
      for (int k = 0; k < k_dim; ++k) {
        acc = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a[(i + r) * k_dim + k]), _mm_set_ss(b[k * n_dim + j]), _mm_set_ss(acc)));
      }
      c[(i + r) * n_dim + j] = acc;
    }
  }
}

void gemm(float* c, const float* a, const float* b, int m_dim, int k_dim, int n_dim) {
  int i = 0;
  for (; i + 6 <= m_dim; i += 6) gemm_rows<6>(c, a, b, k_dim, n_dim, i);
  for (; i < m_dim; ++i) gemm_rows<1>(c, a, b, k_dim, n_dim, i);
}

}  // namespace

const AttentionKernels kAttentionKernels = {dot_f16, f16_to_f32, f32_to_f16, mad_f16, scale_f16, mad_f32, scale_f32, gemm};

}  // namespace pagoda::backend::cpu::avx2
