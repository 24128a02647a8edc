// Rotary position embedding on the GPU, with the CPU backend's angles and rotation
// (backend/cpu/rope.cpp): for pair i of a head at position p, theta_i is p multiplied by
// theta_scale = base^(-2 / n_dims) i times in float (the reference's iterated theta, not
// p * base^(-2i / n_dims)), the angle freq_scale * (theta_i / freq_factors[i]), and the
// pair (x0, x1) becomes (fma(x0, cos, -(x1 sin)), fma(x0, sin, x1 cos)). The products
// are explicitly rounded so that they match the CPU's bits; cosf and sinf (not __cosf)
// are within 2 ulp of the C library's, which is where the results may differ.

#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/ops.h"

namespace pagoda::backend::cuda {
namespace {

constexpr int32_t kMaxRopeDims = 1024;  // as the CPU op
constexpr int kRopeThreads = 256;

struct RopeArgs {
  char* data;       // the head view x
  int64_t n_heads;  // x.ne[1]
  int64_t ne2;      // x.ne[2]: tokens are (t % ne2, t / ne2) over ne[2] and ne[3]
  int64_t nb1, nb2, nb3;
  const int32_t* positions;     // device [n_tokens]
  const float* freq_factors;    // device [n_dims / 2], or null
  int32_t n_dims;               // even, <= head_dim
  float theta_scale;            // base^(-2 / n_dims), computed on the host as the CPU does
  float freq_scale;
  bool neox;
};

// One block per token: its pairs' cos and sin into shared memory, then every pair of
// every head rotated by one thread.
__global__ void rope_kernel(RopeArgs a) {
  __shared__ float cos_sin[kMaxRopeDims];  // cos, sin of pair i at 2i, 2i + 1
  const int64_t t = blockIdx.x;
  const int32_t half = a.n_dims / 2;
  const float position = static_cast<float>(a.positions[t]);
  for (int32_t i = threadIdx.x; i < half; i += blockDim.x) {
    float theta = position;
    for (int32_t j = 0; j < i; ++j) theta = __fmul_rn(theta, a.theta_scale);
    const float factor = a.freq_factors != nullptr ? a.freq_factors[i] : 1.0f;
    const float angle = __fmul_rn(a.freq_scale, __fdiv_rn(theta, factor));
    cos_sin[2 * i] = cosf(angle);
    cos_sin[2 * i + 1] = sinf(angle);
  }
  __syncthreads();
  char* token = a.data + (t % a.ne2) * a.nb2 + (t / a.ne2) * a.nb3;
  const int64_t n_pairs = a.n_heads * half;
  for (int64_t k = threadIdx.x; k < n_pairs; k += blockDim.x) {
    const int64_t h = k / half;
    const int32_t i = static_cast<int32_t>(k % half);
    float* v = reinterpret_cast<float*>(token + h * a.nb1);
    float* first = a.neox ? v + i : v + 2 * i;
    float* second = a.neox ? v + i + half : v + 2 * i + 1;
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float x0 = *first, x1 = *second;
    *first = __fmaf_rn(x0, c, -__fmul_rn(x1, s));
    *second = __fmaf_rn(x0, s, __fmul_rn(x1, c));
  }
}

}  // namespace

Status rope(const Context& ctx, const TensorView& x, const int32_t* positions,
            const RopeParams& params) {
  if (!is_f32_rows(x)) return invalid_argument("rope: needs an f32 head view");
  if (params.n_dims <= 0 || params.n_dims % 2 != 0 || params.n_dims > x.ne[0] ||
      params.n_dims > kMaxRopeDims) {
    return invalid_argument("rope: n_dims must be even, positive, at most the head size and 1024");
  }
  const int64_t n_tokens = x.ne[2] * x.ne[3];
  if (n_tokens > kMaxGridX) return invalid_argument("rope: too many tokens");
  if (n_tokens == 0 || x.ne[1] == 0) return {};
  if (positions == nullptr) return invalid_argument("rope: needs one position per token");
  RopeArgs a;
  a.data = static_cast<char*>(x.data);
  a.n_heads = x.ne[1];
  a.ne2 = x.ne[2];
  a.nb1 = static_cast<int64_t>(x.nb[1]);
  a.nb2 = static_cast<int64_t>(x.nb[2]);
  a.nb3 = static_cast<int64_t>(x.nb[3]);
  a.positions = positions;
  a.freq_factors = params.freq_factors;
  a.n_dims = params.n_dims;
  // The CPU's expression, evaluated by the same host library: the same bits.
  a.theta_scale = std::pow(params.freq_base, -2.0f / static_cast<float>(params.n_dims));
  a.freq_scale = params.freq_scale;
  a.neox = params.neox;
  const int64_t n_pairs = x.ne[1] * (params.n_dims / 2);
  const int threads = n_pairs >= kRopeThreads ? kRopeThreads : threads_for_row(n_pairs);
  rope_kernel<<<static_cast<unsigned>(n_tokens), threads, 0, ctx.stream>>>(a);
  return launch_status("rope");
}

}  // namespace pagoda::backend::cuda
