// RMSNorm (alone, or after a residual add) and LayerNorm on the GPU, one block per row,
// in the CPU backend's order of operations (backend/cpu/norms.cpp): sums in double over float terms, the mean and the
// scale rounded to float, then the row scaled, multiplied by the weight (and the bias
// added) as separate float steps. The double sums add in another order than the CPU's
// sequential loop; with 53-bit sums of at most a few ten thousand terms that changes the
// float they round to only in rare near-ties (then by 1 ulp).

#include <cuda_runtime.h>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/ops.h"

namespace pagoda::backend::cuda {
namespace {

// The sum of every thread's v across the block (blockDim.x a multiple of 32, at most
// 1024). partials: shared [32]. Every thread gets the sum; partials may be reused after.
__device__ double block_sum(double v, double* partials) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, n_warps = blockDim.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < n_warps ? partials[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) partials[0] = v;
  }
  __syncthreads();
  const double sum = partials[0];
  __syncthreads();  // everyone has read it before a next call writes partials
  return sum;
}

// out = in * (1 / sqrt(mean(in^2) + eps)) * w, given this thread's share of the sum of
// squares; each thread reads back only the values of in it summed (in may be what the
// caller just wrote, out may alias in).
__device__ void normalize_row(double sum, const float* in, const float* w, float eps, float* out, int64_t n,
                              double* partials) {
  sum = block_sum(sum, partials);
  const float mean = __double2float_rn(__ddiv_rn(sum, static_cast<double>(n)));
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(mean, eps)));
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) out[i] = __fmul_rn(__fmul_rn(in[i], scale), w[i]);
}

// y = x * (1 / sqrt(mean(x^2) + eps)) * w. y may alias x.
__global__ void rms_norm_kernel(F32Rows x, const float* w, float eps, F32Rows y, int64_t n) {
  allow_next_kernel();  // a matmul reads y next: it may start streaming its weights
  __shared__ double partials[32];
  const float* in = x.row(blockIdx.x);
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(__fmul_rn(in[i], in[i]));
  normalize_row(sum, in, w, eps, y.row(blockIdx.x), n, partials);
}

// x += d, then y = rms_norm(x) as rms_norm_kernel computes it, in one pass.
__global__ void add_rms_norm_kernel(F32Rows x, F32Rows d, const float* w, float eps, F32Rows y, int64_t n) {
  allow_next_kernel();
  __shared__ double partials[32];
  float* in = x.row(blockIdx.x);
  const float* delta = d.row(blockIdx.x);
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = __fadd_rn(in[i], delta[i]);
    in[i] = v;
    sum += static_cast<double>(__fmul_rn(v, v));
  }
  normalize_row(sum, in, w, eps, y.row(blockIdx.x), n, partials);
}

// The sum of squares of (in[i] - mean) as the CPU's sum_of_squares forms it: each group of
// 8 values as a float tree ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)) added in
// double, the last n % 8 squares in double. This thread's share (groups and tail values
// strided by the block).
__device__ double centered_squares(const float* in, float mean, int64_t n) {
  double sum = 0.0;
  const int64_t n_groups = n / 8;
  for (int64_t g = threadIdx.x; g < n_groups; g += blockDim.x) {
    float s[8];
    for (int l = 0; l < 8; ++l) {
      const float d = __fsub_rn(in[8 * g + l], mean);
      s[l] = __fmul_rn(d, d);
    }
    const float left = __fadd_rn(__fadd_rn(s[0], s[4]), __fadd_rn(s[2], s[6]));
    const float right = __fadd_rn(__fadd_rn(s[1], s[5]), __fadd_rn(s[3], s[7]));
    sum += static_cast<double>(__fadd_rn(left, right));
  }
  for (int64_t i = 8 * n_groups + threadIdx.x; i < n; i += blockDim.x) {
    const float d = __fsub_rn(in[i], mean);
    sum += static_cast<double>(__fmul_rn(d, d));
  }
  return sum;
}

// y = (x - mean) * (1 / sqrt(var + eps)) * w + b. y may alias x: every value is read
// again from x in the last pass, by the thread that then writes it.
__global__ void layer_norm_kernel(F32Rows x, const float* w, const float* b, float eps, F32Rows y,
                                  int64_t n) {
  __shared__ double partials[32];
  const float* in = x.row(blockIdx.x);
  float* out = y.row(blockIdx.x);
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(in[i]);
  sum = block_sum(sum, partials);
  const float mean = __fdiv_rn(__double2float_rn(sum), static_cast<float>(n));
  const double sum_sq = block_sum(centered_squares(in, mean, n), partials);
  const float variance = __double2float_rn(__ddiv_rn(sum_sq, static_cast<double>(n)));
  const float scale = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(variance, eps)));
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float centered = __fsub_rn(in[i], mean);
    out[i] = __fadd_rn(__fmul_rn(__fmul_rn(centered, scale), w[i]), b[i]);
  }
}

}  // namespace

Status rms_norm(const Context& ctx, const TensorView& x, const TensorView& weight, float eps,
                const TensorView& y) {
  if (!is_f32_rows(x) || !is_f32_rows(y) || !same_shape(x, y) ||
      !is_vector(weight, DType::F32, x.ne[0]) || x.n_rows() > kMaxGridX) {
    return invalid_argument(
        "rms_norm: needs f32 x and y of one shape and an f32 weight of the row length");
  }
  if (x.n_rows() == 0 || x.ne[0] == 0) return {};
  rms_norm_kernel<<<static_cast<unsigned>(x.n_rows()), threads_for_row(x.ne[0]), 0, ctx.stream>>>(
      rows_of(x), static_cast<const float*>(weight.data), eps, rows_of(y), x.ne[0]);
  return launch_status("rms_norm");
}

Status add_rms_norm(const Context& ctx, const TensorView& x, const TensorView& delta,
                    const TensorView& weight, float eps, const TensorView& y) {
  if (!is_f32_rows(x) || !is_f32_rows(delta) || !is_f32_rows(y) || !same_shape(x, delta) ||
      !same_shape(x, y) || !is_vector(weight, DType::F32, x.ne[0]) || x.n_rows() > kMaxGridX) {
    return invalid_argument(
        "add_rms_norm: needs f32 x, delta and y of one shape and an f32 weight of the row length");
  }
  if (y.data == x.data || y.data == delta.data) return invalid_argument("add_rms_norm: y must not alias x or delta");
  if (x.n_rows() == 0 || x.ne[0] == 0) return {};
  add_rms_norm_kernel<<<static_cast<unsigned>(x.n_rows()), threads_for_row(x.ne[0]), 0, ctx.stream>>>(
      rows_of(x), rows_of(delta), static_cast<const float*>(weight.data), eps, rows_of(y), x.ne[0]);
  return launch_status("add_rms_norm");
}

Status layer_norm(const Context& ctx, const TensorView& x, const TensorView& weight,
                  const TensorView& bias, float eps, const TensorView& y) {
  if (!is_f32_rows(x) || !is_f32_rows(y) || !same_shape(x, y) ||
      !is_vector(weight, DType::F32, x.ne[0]) || !is_vector(bias, DType::F32, x.ne[0]) ||
      x.n_rows() > kMaxGridX) {
    return invalid_argument(
        "layer_norm: needs f32 x and y of one shape and f32 weight and bias of the row length");
  }
  if (x.n_rows() == 0 || x.ne[0] == 0) return {};
  layer_norm_kernel<<<static_cast<unsigned>(x.n_rows()), threads_for_row(x.ne[0]), 0,
                      ctx.stream>>>(rows_of(x), static_cast<const float*>(weight.data),
                                    static_cast<const float*>(bias.data), eps, rows_of(y), x.ne[0]);
  return launch_status("layer_norm");
}

}  // namespace pagoda::backend::cuda
