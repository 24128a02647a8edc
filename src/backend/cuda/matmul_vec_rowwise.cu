// The first few-token kernel, kept to measure the staged one (matmul_vec.cu) against:
// PAGODA_CUDA_MATVEC=rowwise selects it. y = x W^T for n <= kVecMaxTokens: each warp
// streams one weight row once with 16-bit loads, dequantizing it in registers, and takes its dot products with all n activation rows
// in f32. Lane l takes chunks l, l + 32, ... of the row (32 values each), so the warp's
// loads of one step cover a contiguous run of blocks; each lane's partial sums are then
// added across the warp with shuffles.

#include <string>

#include "backend/cuda/chunk_dot.cuh"
#include "backend/cuda/quant_blocks.cuh"
#include "backend/cuda/weight_kernels.h"

namespace pagoda::backend::cuda::weights {
namespace {

constexpr int kWarpsPerBlock = 4;  // one weight row per warp
constexpr int kWarpSize = 32;

struct VecArgs {
  const uint8_t* w;       // [n_out] rows of n_in values, w_row_stride bytes apart
  int64_t w_row_stride;
  int64_t n_out;
  int64_t n_in;
  const float* x;         // [n_tokens][n_in], rows x_stride floats apart
  int64_t x_stride;
  float* y;               // [n_tokens][n_out], rows y_stride floats apart
  int64_t y_stride;
  int n_tokens;           // 1..kVecMaxTokens
  bool x_aligned;         // x and x_stride * 4 are multiples of 16 bytes: float4 loads
};

template <DType T>
__global__ void __launch_bounds__(kWarpsPerBlock * kWarpSize) matmul_vec_kernel(VecArgs a) {
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  if (row >= a.n_out) return;  // the whole warp leaves together: the shuffles below see full warps
  const uint8_t* w_row = a.w + row * a.w_row_stride;
  const int64_t n_chunks = (a.n_in + kChunkValues - 1) / kChunkValues;

  float acc[kVecMaxTokens];
#pragma unroll
  for (int t = 0; t < kVecMaxTokens; ++t) acc[t] = 0.0f;

  for (int64_t c = lane; c < n_chunks; c += kWarpSize) {
    const int count = static_cast<int>(min(static_cast<int64_t>(kChunkValues), a.n_in - c * kChunkValues));
    float v[32];
    dequantize_chunk<T>(w_row, c, count, v);
    const float* x_chunk = a.x + c * kChunkValues;
    dot_chunk_tokens(v, x_chunk, a.x_stride, a.n_tokens, count, a.x_aligned, acc);
  }

#pragma unroll
  for (int t = 0; t < kVecMaxTokens; ++t) {
    if (t < a.n_tokens) {  // the same for every lane
#pragma unroll
      for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
        acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], offset);
      }
    }
  }
  if (lane == 0) {
#pragma unroll
    for (int t = 0; t < kVecMaxTokens; ++t) {
      if (t < a.n_tokens) a.y[t * a.y_stride + row] = acc[t];
    }
  }
}

}  // namespace

Status matmul_vec_rowwise(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  const int64_t n_tokens = x.n_rows();
  const int64_t n_out = w.ne[1];
  if (n_tokens == 0 || n_out == 0) return {};
  if (n_tokens > kVecMaxTokens) {
    return internal_error("matmul_vec_rowwise: " + std::to_string(n_tokens) + " tokens, at most " +
                          std::to_string(kVecMaxTokens));
  }
  VecArgs args;
  args.w = static_cast<const uint8_t*>(w.data);
  args.w_row_stride = static_cast<int64_t>(w.nb[1]);
  args.n_out = n_out;
  args.n_in = w.ne[0];
  args.x = static_cast<const float*>(x.data);
  args.x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
  args.y = static_cast<float*>(y.data);
  args.y_stride = static_cast<int64_t>(y.nb[1] / sizeof(float));
  args.n_tokens = static_cast<int>(n_tokens);
  args.x_aligned = aligned_to(x.data, 16) && (n_tokens == 1 || x.nb[1] % 16 == 0);

  const int64_t n_blocks = (n_out + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (n_blocks > INT32_MAX) return invalid_argument("matmul: too many weight rows");
  const bool known = visit_weight_format(w.type, [&](auto format) {
    matmul_vec_kernel<decltype(format)::value>
        <<<static_cast<unsigned>(n_blocks), kWarpsPerBlock * kWarpSize, 0, ctx.stream>>>(args);
  });
  if (!known) return unsupported("matmul: no kernel for weight type " + std::string(dtype_name(w.type)));
  return launch_status("matmul (vector kernel)");
}

}  // namespace pagoda::backend::cuda::weights
