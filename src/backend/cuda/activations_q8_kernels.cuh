#pragma once
// The kernels of activations_q8.cu (which launches them), in a header of their own so
// that a host emulation of CUDA threads (tests/backend/cuda/simt_emulation.h) can run the
// same source where no GPU is. Q8_K: four neighbouring threads per 256 values, thread c
// holding values 64 c .. 64 c + 63. Q8_0 / Q8_1: one thread per 32 values.

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/activations_q8.h"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/quantize_q8.cuh"

namespace pagoda::backend::cuda::activation_kernels {
// Internal linkage: the kernels' host stubs (nvcc) and their emulation (tests) must not
// share names in one binary.
namespace {

constexpr int kThreads = 128;  // a block

// One launch: n_tokens rows of x to quantize into `out`.
struct Args {
  const char* x;
  int64_t x_row_bytes;
  QuantizedRows out;
  int64_t blocks_per_row;  // n / scale_values
  int64_t n_blocks;        // blocks_per_row * n_tokens
};

__global__ void __launch_bounds__(kThreads) quantize_q8k_kernel(Args a) {
  allow_next_kernel();  // the matmul after it may start streaming its weights
  // No thread leaves early: the four threads of a block reduce with whole-warp shuffles.
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t block = thread / 4;
  const int c = static_cast<int>(thread % 4);
  const bool active = block < a.n_blocks;
  const int64_t token = active ? block / a.blocks_per_row : 0, in_row = active ? block % a.blocks_per_row : 0;
  const float* x = reinterpret_cast<const float*>(a.x + token * a.x_row_bytes) + in_row * 256 + 64 * c;
  float v[64];
#pragma unroll
  for (int j = 0; j < 64; ++j) v[j] = active ? x[j] : 0.0f;
  const int base[2] = {64 * c, 64 * c + 32};
  const q8::Quarter256 quarter = q8::quantize_quarter256(v, base);
  if (!active) return;
  uint4* q = reinterpret_cast<uint4*>(a.out.q + token * a.out.n + in_row * 256 + 64 * c);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    q[i] = make_uint4(quarter.q[4 * i], quarter.q[4 * i + 1], quarter.q[4 * i + 2], quarter.q[4 * i + 3]);
  }
#pragma unroll
  for (int g = 0; g < 4; ++g) a.out.sums[block * 16 + 4 * c + g] = quarter.sum[g];
  if (c == 0) a.out.d[block] = quarter.d;
}

// One 32-value block per thread; kQ8_1: Q8_1's s too.
template <bool kQ8_1>
__global__ void __launch_bounds__(kThreads) quantize_q8_32_kernel(Args a) {
  allow_next_kernel();
  const int64_t block = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (block >= a.n_blocks) return;
  const int64_t token = block / a.blocks_per_row, in_row = block % a.blocks_per_row;
  const float* x = reinterpret_cast<const float*>(a.x + token * a.x_row_bytes) + in_row * 32;
  float v[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) v[j] = x[j];
  const q8::Block32 b = q8::quantize_block32(v);
  uint4* q = reinterpret_cast<uint4*>(a.out.q + token * a.out.n + in_row * 32);
  q[0] = make_uint4(b.q[0], b.q[1], b.q[2], b.q[3]);
  q[1] = make_uint4(b.q[4], b.q[5], b.q[6], b.q[7]);
  a.out.d[block] = b.d;
  a.out.sums[block] = b.sum;
  if constexpr (kQ8_1) a.out.s[block] = b.s;
}

}  // namespace
}  // namespace pagoda::backend::cuda::activation_kernels
