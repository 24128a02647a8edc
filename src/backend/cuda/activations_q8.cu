// Activations to Q8_K, Q8_0 and Q8_1 on the GPU, operation for operation as the CPU's
// quantizers (see activations_q8.h), with quantize_q8.cuh's arithmetic: the launches of
// activations_q8_kernels.cuh's kernels.

#include <cuda_runtime.h>

#include "backend/cuda/activations_q8.h"
#include "backend/cuda/activations_q8_kernels.cuh"
#include "backend/cuda/f32_rows.cuh"

namespace pagoda::backend::cuda {

using activation_kernels::Args;
using activation_kernels::kThreads;
using activation_kernels::quantize_q8_32_kernel;
using activation_kernels::quantize_q8k_kernel;

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
      quantize_q8k_kernel<<<static_cast<unsigned>((4 * a.n_blocks + kThreads - 1) / kThreads), kThreads, 0,
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
