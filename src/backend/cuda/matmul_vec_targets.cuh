#pragma once
// What the few-token kernels (matmul_vec.cu's piece kernel, matmul_vec_staged.cu and
// matmul_vec_int8.cu) share: the weights of one launch (up to kVecMaxTargets of one type and row length, their
// rows numbered one after another), built once by matmul_vec from the views it checked,
// the SwiGLU forms' activation, and the launch that may start before the kernel before it
// ends (launch_order.cuh).

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <string>

#include "backend/cuda/weight_kernels.h"

namespace pagoda::backend::cuda::weights {

// One weight matrix of a launch.
struct VecTarget {
  const uint8_t* w = nullptr;    // row 0
  int64_t row_stride = 0;        // bytes
  const uint8_t* end = nullptr;  // one past the last byte of the last row: no load reaches past it
  float* y = nullptr;            // [n_tokens][rows], rows y_stride floats apart
  int64_t first_item = 0;        // its row 0 is work item first_item of the launch
};

// The weights of a launch: t1, t2 unused with fewer. SwiGLU: t0 gate (and out), t1 up,
// the items gate's rows.
struct VecTargets {
  VecTarget t0, t1, t2;
  int n_targets = 0;
  int64_t n_items = 0;  // rows of all targets
};

// The target of work item `item` of plain products, and its row in it.
__device__ __forceinline__ void locate(const VecTargets& s, int64_t item, VecTarget& t, int64_t& row) {
  t = s.t0;
  if (s.n_targets > 1 && item >= s.t1.first_item) t = s.t1;
  if (s.n_targets > 2 && item >= s.t2.first_item) t = s.t2;
  row = item - t.first_item;
}

// The activation of the silu_mul op (elementwise.cu), operation for operation: the SwiGLU
// forms' bits are those of the products followed by silu_mul.
__device__ __forceinline__ float silu_times(float gate, float up) {
  return __fmul_rn(__fdiv_rn(gate, __fadd_rn(1.0f, expf(-gate))), up);
}

inline VecTarget make_vec_target(const TensorView& w, const TensorView& y, int64_t first_item) {
  VecTarget t;
  t.w = static_cast<const uint8_t*>(w.data);
  t.row_stride = static_cast<int64_t>(w.nb[1]);
  t.end = t.w + (w.ne[1] - 1) * t.row_stride + static_cast<int64_t>(w.row_bytes());
  t.y = static_cast<float*>(y.data);
  t.first_item = first_item;
  return t;
}

// The products' weights (at most kVecMaxTargets), those without rows left out.
inline VecTargets vec_targets(std::span<const MatmulTarget> targets) {
  VecTargets s;
  VecTarget* slots[] = {&s.t0, &s.t1, &s.t2};
  for (const MatmulTarget& t : targets) {
    if (t.w.ne[1] == 0) continue;  // no rows: nothing to write
    *slots[s.n_targets++] = make_vec_target(t.w, t.y, s.n_items);
    s.n_items += t.w.ne[1];
  }
  return s;
}

// matmul_vec_swiglu's gate and up, both written to out.
inline VecTargets swiglu_targets(const TensorView& w_gate, const TensorView& w_up, const TensorView& out) {
  VecTargets s;
  s.t0 = make_vec_target(w_gate, out, 0);
  s.t1 = make_vec_target(w_up, out, 0);
  s.n_targets = 2;
  s.n_items = w_gate.ne[1];
  return s;
}

// kernel<<<grid, block, shared_bytes>>>(args) on ctx's stream, allowed to start before
// the kernel before it ends where ctx.programmatic_launch; `what` names it in errors.
template <typename Kernel, typename KernelArgs>
Status launch_early_start(const Context& ctx, dim3 grid, dim3 block, Kernel kernel, const KernelArgs& args,
                          const char* what, size_t shared_bytes = 0) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = ctx.stream;
  cudaLaunchAttribute early_start{};
  early_start.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early_start.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &early_start;
  config.numAttrs = ctx.programmatic_launch ? 1 : 0;
  const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, args);
  if (launched != cudaSuccess) {
    cudaGetLastError();
    return internal_error(std::string(what) + ": cudaLaunchKernelEx: " + cudaGetErrorString(launched));
  }
  return launch_status(what);
}

// Whether the integer kernel (matmul_vec_int8.cu) takes these weights and x: Q8_0, Q4_0,
// Q4_1, Q5_0, Q5_1, IQ4_NL or k-quant (Q2_K .. Q6_K, IQ4_XS) rows of up to 384 blocks,
// aligned for its loads,
// with a workspace for x's quantized rows. It depends on the weights and the backend,
// never on the tokens.
bool matmul_vec_int8_takes(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets);

// That kernel on weights matmul_vec or matmul_vec_swiglu checked and gathered (type: the
// weights'; y_stride: every y's row stride in floats).
Status matmul_vec_int8(const Context& ctx, const TensorView& x, DType type, const VecTargets& targets,
                       int64_t y_stride, bool swiglu);

// The staged kernel on weights matmul_vec or matmul_vec_swiglu checked and gathered: x's
// rows against `targets` (w0 and y0: the first weight and its y, which give the row
// length and y's stride).
Status matmul_vec_staged(const Context& ctx, const TensorView& x, const TensorView& w0, const TensorView& y0,
                         const VecTargets& targets, bool swiglu);

}  // namespace pagoda::backend::cuda::weights
