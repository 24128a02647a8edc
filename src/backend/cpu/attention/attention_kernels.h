#pragma once
// Vector helpers of the reference numerics mode's attention schedules (and the f16
// conversion of new K/V rows, in both modes), in the reference CPU build's arithmetic:
// the f16 accumulator of V is rounded to half after every multiply-add, and the f32
// products of the tiled path are FMA chains over the inner index in ascending order.

#include <cstdint>

#include "quant/dot.h"

namespace pagoda::backend::cpu {

struct AttentionKernels {
  // sum x[i] * y[i] over halves, summed as the reference's f16 dot: 4 x 8 f32 lanes of
  // FMAs over each 32 values, the lanes folded (0+2, 1+3, then 0+1, halves, pairs), the
  // last n % 32 products added in double.
  float (*dot_f16)(const uint16_t* x, const uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);  // to nearest even, as core/fp16.h
  void (*mad_f16)(uint16_t* y, const uint16_t* x, float v, int64_t n);  // y = half(fma(x, v, y))
  void (*scale_f16)(uint16_t* y, float v, int64_t n);                   // y = half(y * v)
  void (*mad_f32)(float* y, const float* x, float v, int64_t n);        // y = fma(x, v, y)
  void (*scale_f32)(float* y, float v, int64_t n);                      // y *= v
  // C[m][n] += sum_k A[m][k] * B[k][n] (row-major, leading dimensions k_dim and n_dim):
  // each element is one FMA chain over k = 0, 1, ..., starting from C's value.
  void (*gemm)(float* c, const float* a, const float* b, int m_dim, int k_dim, int n_dim);
};

// The kernels for `isa` (AVX2 and above share one set).
const AttentionKernels& attention_kernels(Isa isa);

namespace avx2 {
extern const AttentionKernels kAttentionKernels;
}

}  // namespace pagoda::backend::cpu
