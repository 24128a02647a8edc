// Activations to Q8_K on the GPU, operation for operation as the CPU's
// quantize_block_q8_K (see activations_q8k.h): one warp per 256 values, lane l holding
// values 8 l .. 8 l + 7.

#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/activations_q8k.h"
#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/launch_order.cuh"

namespace pagoda::backend::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kValuesPerLane = kQ8kValues / 32;

struct Args {
  const char* x;
  int64_t x_row_bytes;
  Q8kRows out;
  int64_t blocks_per_row;  // n / 256
  int64_t n_blocks;        // blocks_per_row * n_tokens
};

__global__ void __launch_bounds__(kWarpsPerBlock * 32) quantize_q8k_kernel(Args a) {
  allow_next_kernel();  // the matmul after it may start streaming its weights
  const int64_t block = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (block >= a.n_blocks) return;  // the whole warp
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t token = block / a.blocks_per_row, in_row = block % a.blocks_per_row;
  const float* x = reinterpret_cast<const float*>(a.x + token * a.x_row_bytes) + in_row * kQ8kValues +
                   kValuesPerLane * lane;
  float v[kValuesPerLane];
#pragma unroll
  for (int j = 0; j < kValuesPerLane; ++j) v[j] = x[j];
  // The first value of largest magnitude: this lane's, then across the warp (a tie goes
  // to the lower index).
  float amax = 0.0f, max = 0.0f;
  int index = 0;
#pragma unroll
  for (int j = 0; j < kValuesPerLane; ++j) {
    const float ax = fabsf(v[j]);
    if (ax > amax) {
      amax = ax;
      max = v[j];
      index = kValuesPerLane * lane + j;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_amax = __shfl_xor_sync(0xffffffffu, amax, offset);
    const float other_max = __shfl_xor_sync(0xffffffffu, max, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other_amax > amax || (other_amax == amax && other_index < index)) {
      amax = other_amax;
      max = other_max;
      index = other_index;
    }
  }
  int8_t* q = a.out.q + token * a.out.n + in_row * kQ8kValues + kValuesPerLane * lane;
  int sum = 0;
  uint32_t packed[2] = {0, 0};
  if (amax != 0.0f) {
    const float iscale = __fdiv_rn(-127.0f, max);
#pragma unroll
    for (int j = 0; j < kValuesPerLane; ++j) {
      const int r = __float2int_rn(__fmul_rn(iscale, v[j]));
      const int c = r < 127 ? r : 127;
      sum += c;
      packed[j / 4] |= (static_cast<uint32_t>(c) & 0xFFu) << (8 * (j % 4));
    }
    if (lane == 0) a.out.d[token * a.blocks_per_row + in_row] = __fdiv_rn(1.0f, iscale);
  } else if (lane == 0) {
    a.out.d[token * a.blocks_per_row + in_row] = 0.0f;
  }
  *reinterpret_cast<uint2*>(q) = make_uint2(packed[0], packed[1]);
  // Sums of 32: lanes 4k .. 4k + 3 hold values 32k .. 32k + 31.
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  constexpr int64_t kSumsPerBlock = kQ8kValues / kQ8kSumValues;
  if (lane % 4 == 0) a.out.sums[(token * a.blocks_per_row + in_row) * kSumsPerBlock + lane / 4] = sum;
}

}  // namespace

bool take_q8k_rows(const Context& ctx, int64_t n, int64_t n_tokens, Q8kRows* out) {
  if (ctx.workspace == nullptr || n % kQ8kValues != 0) return false;
  out->n = n;
  out->n_tokens = n_tokens;
  out->q = static_cast<int8_t*>(ctx.workspace->take(static_cast<size_t>(n * n_tokens)));
  out->d = static_cast<float*>(ctx.workspace->take(sizeof(float) * static_cast<size_t>(n / kQ8kValues * n_tokens)));
  out->sums =
      static_cast<int32_t*>(ctx.workspace->take(sizeof(int32_t) * static_cast<size_t>(n / kQ8kSumValues * n_tokens)));
  return out->q != nullptr && out->d != nullptr && out->sums != nullptr;
}

Status quantize_rows_q8k(const Context& ctx, const TensorView& x, const Q8kRows& out) {
  if (x.type != DType::F32 || x.ne[0] != out.n || x.n_rows() != out.n_tokens || out.n % kQ8kValues != 0 ||
      x.nb[1] % sizeof(float) != 0) {
    return internal_error("quantize_rows_q8k: x does not match the rows");
  }
  Args a;
  a.x = static_cast<const char*>(x.data);
  a.x_row_bytes = static_cast<int64_t>(x.nb[1]);
  a.out = out;
  a.blocks_per_row = out.n / kQ8kValues;
  a.n_blocks = a.blocks_per_row * out.n_tokens;
  if (a.n_blocks == 0) return {};
  const auto grid = static_cast<unsigned>((a.n_blocks + kWarpsPerBlock - 1) / kWarpsPerBlock);
  quantize_q8k_kernel<<<grid, kWarpsPerBlock * 32, 0, ctx.stream>>>(a);
  return launch_status("quantize activations (q8_K)");
}

}  // namespace pagoda::backend::cuda
