#include "backend/cpu/attention/attention_kernels.h"

#include <cmath>

#include "core/fp16.h"

namespace pagoda::backend::cpu {
namespace {

float dot_f16(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t n_simd = n / 32 * 32;
  double sum = 0.0;
  if (n_simd > 0) {
    float lanes[4][8] = {};
    for (int64_t i = 0; i < n_simd; i += 32) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 8; ++l) {
          const int64_t k = i + 8 * j + l;
          lanes[j][l] = std::fma(fp16_to_f32(x[k]), fp16_to_f32(y[k]), lanes[j][l]);
        }
      }
    }
    float folded[8];
    for (int l = 0; l < 8; ++l) folded[l] = (lanes[0][l] + lanes[2][l]) + (lanes[1][l] + lanes[3][l]);
    float quarter[4];
    for (int l = 0; l < 4; ++l) quarter[l] = folded[l] + folded[l + 4];
    sum = static_cast<double>((quarter[0] + quarter[1]) + (quarter[2] + quarter[3]));
  }
  for (int64_t i = n_simd; i < n; ++i) sum += static_cast<double>(fp16_to_f32(x[i]) * fp16_to_f32(y[i]));
  return static_cast<float>(sum);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}
void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}
void mad_f16(uint16_t* y, const uint16_t* x, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(std::fma(fp16_to_f32(x[i]), v, fp16_to_f32(y[i])));
}
void scale_f16(uint16_t* y, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(fp16_to_f32(y[i]) * v);
}
void mad_f32(float* y, const float* x, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(x[i], v, y[i]);
}
void scale_f32(float* y, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= v;
}
void gemm(float* c, const float* a, const float* b, int m_dim, int k_dim, int n_dim) {
  for (int i = 0; i < m_dim; ++i) {
    float* c_row = c + static_cast<int64_t>(i) * n_dim;
    for (int k = 0; k < k_dim; ++k) {
      const float a_ik = a[static_cast<int64_t>(i) * k_dim + k];
      const float* b_row = b + static_cast<int64_t>(k) * n_dim;
      for (int j = 0; j < n_dim; ++j) c_row[j] = std::fma(a_ik, b_row[j], c_row[j]);
    }
  }
}

constexpr AttentionKernels kScalarKernels = {dot_f16, f16_to_f32, f32_to_f16, mad_f16, scale_f16, mad_f32, scale_f32, gemm};

}  // namespace

const AttentionKernels& attention_kernels(Isa isa) {
  return isa == Isa::kScalar ? kScalarKernels : avx2::kAttentionKernels;
}

}  // namespace pagoda::backend::cpu
