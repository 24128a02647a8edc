// Elementwise ops on the GPU: add, add_bias, silu_mul (SwiGLU) and gelu. One block per
// row, its threads striding over the row's values (coalesced). Every float operation is
// written as an explicitly rounded intrinsic (__fadd_rn, ...) so that nvcc cannot fuse a
// multiply and an add that the CPU backend rounds separately.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/ops.h"

namespace pagoda::backend::cuda {
namespace {

__global__ void add_kernel(F32Rows a, F32Rows b, F32Rows out, int64_t n) {
  const int64_t r = blockIdx.x;
  const float* x = a.row(r);
  const float* y = b.row(r);
  float* z = out.row(r);  // may alias x or y: each value is read before it is written
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) z[i] = __fadd_rn(x[i], y[i]);
}

__device__ float bias_at(const float* bias, int64_t i) { return bias[i]; }
__device__ float bias_at(const __half* bias, int64_t i) { return __half2float(bias[i]); }

// bias: [n] f32 or f16.
template <typename Bias>
__global__ void add_bias_kernel(F32Rows y, const Bias* bias, int64_t n) {
  float* row = y.row(blockIdx.x);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) row[i] = __fadd_rn(row[i], bias_at(bias, i));
}

// z = g / (1 + exp(-g)) * u, in the CPU's order of operations; expf (not __expf) keeps
// the exponential within 2 ulp.
__global__ void silu_mul_kernel(F32Rows gate, F32Rows up, F32Rows out, int64_t n) {
  allow_next_kernel();  // the down projection's matmul may start streaming its weights
  const int64_t r = blockIdx.x;
  const float* g = gate.row(r);
  const float* u = up.row(r);
  float* z = out.row(r);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float x = g[i];
    z[i] = __fmul_rn(__fdiv_rn(x, __fadd_rn(1.0f, expf(-x))), u[i]);
  }
}

// gelu with the tanh approximation in f32: 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))),
// operations in the CPU formula's left-to-right order. Like the CPU op, 0 at and below -10
// and x itself from 10 up (where gelu equals those to within f16 precision, which the
// CPU's table has); NaN stays NaN.
__device__ float gelu_value(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  if (x <= -10.0f) return 0.0f;
  if (!(x < 10.0f)) return x;
  const float inner = __fmul_rn(__fmul_rn(kSqrt2OverPi, x),
                                __fadd_rn(1.0f, __fmul_rn(__fmul_rn(kCoefA, x), x)));
  return __fmul_rn(__fmul_rn(0.5f, x), __fadd_rn(1.0f, tanhf(inner)));
}

__global__ void gelu_kernel(F32Rows x, int64_t n) {
  float* row = x.row(blockIdx.x);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) row[i] = gelu_value(row[i]);
}

// Rows of the view as a grid size; false when there are more than one grid holds.
bool grid_rows(const TensorView& v, unsigned* rows) {
  const int64_t n = v.n_rows();
  if (n > kMaxGridX) return false;
  *rows = static_cast<unsigned>(n);
  return true;
}

}  // namespace

Status add(const Context& ctx, const TensorView& a, const TensorView& b, const TensorView& out) {
  unsigned rows = 0;
  if (!is_f32_rows(a) || !is_f32_rows(b) || !is_f32_rows(out) || !same_shape(a, b) ||
      !same_shape(a, out) || !grid_rows(a, &rows)) {
    return invalid_argument("add: needs f32 views of one shape");
  }
  if (rows == 0 || a.ne[0] == 0) return {};
  add_kernel<<<rows, threads_for_row(a.ne[0]), 0, ctx.stream>>>(rows_of(a), rows_of(b), rows_of(out),
                                                                a.ne[0]);
  return launch_status("add");
}

Status add_bias(const Context& ctx, const TensorView& y, const TensorView& bias) {
  unsigned rows = 0;
  const bool f32_bias = is_vector(bias, DType::F32, y.ne[0]);
  const bool f16_bias = is_vector(bias, DType::F16, y.ne[0]);
  if (!is_f32_rows(y) || !(f32_bias || f16_bias) || !grid_rows(y, &rows)) {
    return invalid_argument("add_bias: needs f32 rows and an f32/f16 bias of the row length");
  }
  if (rows == 0 || y.ne[0] == 0) return {};
  const int threads = threads_for_row(y.ne[0]);
  if (f32_bias) {
    add_bias_kernel<<<rows, threads, 0, ctx.stream>>>(rows_of(y), static_cast<const float*>(bias.data),
                                                      y.ne[0]);
  } else {
    add_bias_kernel<<<rows, threads, 0, ctx.stream>>>(rows_of(y), static_cast<const __half*>(bias.data),
                                                      y.ne[0]);
  }
  return launch_status("add_bias");
}

Status silu_mul(const Context& ctx, const TensorView& gate, const TensorView& up,
                const TensorView& out) {
  unsigned rows = 0;
  if (!is_f32_rows(gate) || !is_f32_rows(up) || !is_f32_rows(out) || !same_shape(gate, up) ||
      !same_shape(gate, out) || !grid_rows(gate, &rows)) {
    return invalid_argument("silu_mul: needs f32 views of one shape");
  }
  if (rows == 0 || gate.ne[0] == 0) return {};
  silu_mul_kernel<<<rows, threads_for_row(gate.ne[0]), 0, ctx.stream>>>(
      rows_of(gate), rows_of(up), rows_of(out), gate.ne[0]);
  return launch_status("silu_mul");
}

Status gelu(const Context& ctx, const TensorView& x) {
  unsigned rows = 0;
  if (!is_f32_rows(x) || !grid_rows(x, &rows)) return invalid_argument("gelu: needs an f32 view");
  if (rows == 0 || x.ne[0] == 0) return {};
  gelu_kernel<<<rows, threads_for_row(x.ne[0]), 0, ctx.stream>>>(rows_of(x), x.ne[0]);
  return launch_status("gelu");
}

}  // namespace pagoda::backend::cuda
