#pragma once
// The few-token matmul kernels' inner step (matmul_vec.cu, matmul_vec_rowwise.cu): one
// dequantized chunk of 32 weights times the same 32 values of each token's activations,
// in f32, each token's sum one FMA chain in value order.

#include <cstdint>

namespace pagoda::backend::cuda {

// acc += v . x[0..32) (x 16-byte aligned).
__device__ __forceinline__ float dot_chunk_aligned(const float (&v)[32], const float* x, float acc) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float4 xv = x4[i];
    acc = fmaf(v[4 * i], xv.x, acc);
    acc = fmaf(v[4 * i + 1], xv.y, acc);
    acc = fmaf(v[4 * i + 2], xv.z, acc);
    acc = fmaf(v[4 * i + 3], xv.w, acc);
  }
  return acc;
}

// acc += v[0..count) . x[0..count); reads no x past count.
__device__ __forceinline__ float dot_chunk(const float (&v)[32], const float* x, int count, float acc) {
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    if (j < count) acc = fmaf(v[j], x[j], acc);
  }
  return acc;
}

// acc[t] += v[0..count) . x_chunk[t * x_stride + 0..count) for each token t < n_tokens
// (at most kTokens); float4 loads where x_aligned (x and its stride multiples of 16
// bytes) and the chunk is whole.
template <int kTokens>
__device__ __forceinline__ void dot_chunk_tokens(const float (&v)[32], const float* x_chunk, int64_t x_stride,
                                                 int n_tokens, int count, bool x_aligned, float (&acc)[kTokens]) {
  if (x_aligned && count == 32) {
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < n_tokens) acc[t] = dot_chunk_aligned(v, x_chunk + t * x_stride, acc[t]);
    }
  } else {
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t < n_tokens) acc[t] = dot_chunk(v, x_chunk + t * x_stride, count, acc[t]);
    }
  }
}

}  // namespace pagoda::backend::cuda
