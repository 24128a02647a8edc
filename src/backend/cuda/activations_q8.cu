// Activations to Q8_K, Q8_0 and Q8_1 on the GPU, operation for operation as the CPU's
// quantizers (see activations_q8.h). Q8_K: one warp per 256 values, lane l holding values
// 8 l .. 8 l + 7. Q8_0 / Q8_1: one thread per 32 values, scanning them in order as the
// CPU does (so even NaNs are skipped alike).

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/activations_q8.h"
#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/launch_order.cuh"

namespace pagoda::backend::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kQ8kValuesPerLane = 256 / 32;

struct Args {
  const char* x;
  int64_t x_row_bytes;
  QuantizedRows out;
  int64_t blocks_per_row;  // n / scale_values
  int64_t n_blocks;        // blocks_per_row * n_tokens
};

__device__ __forceinline__ uint32_t pack_byte(int q, int j) { return (static_cast<uint32_t>(q) & 0xFFu) << (8 * (j % 4)); }

__global__ void __launch_bounds__(kThreads) quantize_q8k_kernel(Args a) {
  allow_next_kernel();  // the matmul after it may start streaming its weights
  const int64_t block = static_cast<int64_t>(blockIdx.x) * (kThreads / 32) + threadIdx.x / 32;
  if (block >= a.n_blocks) return;  // the whole warp
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t token = block / a.blocks_per_row, in_row = block % a.blocks_per_row;
  const float* x =
      reinterpret_cast<const float*>(a.x + token * a.x_row_bytes) + in_row * 256 + kQ8kValuesPerLane * lane;
  float v[kQ8kValuesPerLane];
#pragma unroll
  for (int j = 0; j < kQ8kValuesPerLane; ++j) v[j] = x[j];
  // The first value of largest magnitude: this lane's, then across the warp (a tie goes
  // to the lower index).
  float amax = 0.0f, max = 0.0f;
  int index = 0;
#pragma unroll
  for (int j = 0; j < kQ8kValuesPerLane; ++j) {
    const float ax = fabsf(v[j]);
    if (ax > amax) {
      amax = ax;
      max = v[j];
      index = kQ8kValuesPerLane * lane + j;
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
  int sum = 0;
  uint32_t packed[2] = {0, 0};
  float d = 0.0f;
  if (amax != 0.0f) {
    const float iscale = __fdiv_rn(-127.0f, max);
#pragma unroll
    for (int j = 0; j < kQ8kValuesPerLane; ++j) {
      const int r = __float2int_rn(__fmul_rn(iscale, v[j]));
      const int c = r < 127 ? r : 127;
      sum += c;
      packed[j / 4] |= pack_byte(c, j);
    }
    d = __fdiv_rn(1.0f, iscale);
  }
  if (lane == 0) a.out.d[block] = d;
  int8_t* q = a.out.q + token * a.out.n + in_row * 256 + kQ8kValuesPerLane * lane;
  *reinterpret_cast<uint2*>(q) = make_uint2(packed[0], packed[1]);
  // Sums of 16 (the CPU's bsums): lanes 2k and 2k + 1 hold values 16k .. 16k + 15.
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  if (lane % 2 == 0) a.out.sums[block * (256 / 16) + lane / 2] = sum;
}

// One 32-value block per thread; kSums: Q8_1's s too.
template <bool kQ8_1>
__global__ void __launch_bounds__(kThreads) quantize_q8_32_kernel(Args a) {
  allow_next_kernel();
  const int64_t block = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (block >= a.n_blocks) return;
  const int64_t token = block / a.blocks_per_row, in_row = block % a.blocks_per_row;
  const float* x = reinterpret_cast<const float*>(a.x + token * a.x_row_bytes) + in_row * 32;
  float v[32];
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    v[j] = x[j];
    const float ax = fabsf(v[j]);
    amax = amax > ax ? amax : ax;  // the CPU's abs_max, NaN handling included
  }
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
  int sum = 0;
  uint32_t packed[8] = {};
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    // Finite blocks: |x id| <= 127 (1 + 2^-23), so the clamp changes nothing and this is
    // the CPU's plain rounding; other blocks take the CPU's clamped one.
    const float s = __fmul_rn(v[j], id);
    const int c = s == s ? __float2int_rn(s < -127.0f ? -127.0f : (s > 127.0f ? 127.0f : s)) : 0;
    sum += c;
    packed[j / 4] |= pack_byte(c, j);
  }
  uint4* q = reinterpret_cast<uint4*>(a.out.q + token * a.out.n + in_row * 32);
  q[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  q[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
  a.out.d[block] = __half2float(__float2half_rn(d));
  a.out.sums[block] = sum;
  if constexpr (kQ8_1) a.out.s[block] = __half2float(__float2half_rn(__fmul_rn(static_cast<float>(sum), d)));
}

}  // namespace

bool take_quantized_rows(const Context& ctx, ActivationFormat format, int64_t n, int64_t n_tokens,
                         QuantizedRows* out) {
  if (ctx.workspace == nullptr || n % scale_values(format) != 0) return false;
  out->n = n;
  out->n_tokens = n_tokens;
  const auto count = [&](int64_t per) { return static_cast<size_t>(n / per * n_tokens); };
  out->q = static_cast<int8_t*>(ctx.workspace->take(count(1)));
  out->d = static_cast<float*>(ctx.workspace->take(sizeof(float) * count(scale_values(format))));
  out->sums = static_cast<int32_t*>(ctx.workspace->take(sizeof(int32_t) * count(sum_values(format))));
  out->s = format == ActivationFormat::kQ8_1 ? static_cast<float*>(ctx.workspace->take(sizeof(float) * count(32)))
                                             : nullptr;
  return out->q != nullptr && out->d != nullptr && out->sums != nullptr &&
         (format != ActivationFormat::kQ8_1 || out->s != nullptr);
}

Status quantize_rows(const Context& ctx, ActivationFormat format, const TensorView& x, const QuantizedRows& out) {
  if (x.type != DType::F32 || x.ne[0] != out.n || x.n_rows() != out.n_tokens || out.n % scale_values(format) != 0 ||
      x.nb[1] % sizeof(float) != 0) {
    return internal_error("quantize_rows: x does not match the rows");
  }
  Args a;
  a.x = static_cast<const char*>(x.data);
  a.x_row_bytes = static_cast<int64_t>(x.nb[1]);
  a.out = out;
  a.blocks_per_row = out.n / scale_values(format);
  a.n_blocks = a.blocks_per_row * out.n_tokens;
  if (a.n_blocks == 0) return {};
  switch (format) {
    case ActivationFormat::kQ8_K:
      quantize_q8k_kernel<<<static_cast<unsigned>((a.n_blocks + kThreads / 32 - 1) / (kThreads / 32)), kThreads, 0,
                            ctx.stream>>>(a);
      break;
    case ActivationFormat::kQ8_0:
      quantize_q8_32_kernel<false><<<static_cast<unsigned>((a.n_blocks + kThreads - 1) / kThreads), kThreads, 0,
                                     ctx.stream>>>(a);
      break;
    case ActivationFormat::kQ8_1:
      quantize_q8_32_kernel<true><<<static_cast<unsigned>((a.n_blocks + kThreads - 1) / kThreads), kThreads, 0,
                                    ctx.stream>>>(a);
      break;
  }
  return launch_status("quantize activations (q8)");
}

}  // namespace pagoda::backend::cuda
