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

// One head view the kernel rotates.
struct RopeTarget {
  char* data;
  int64_t n_heads;  // ne[1]
  int64_t nb1, nb2, nb3;
};

struct RopeArgs {
  RopeTarget x[2];  // the views: q and k of one layer, or one view and x[1] with no heads
  int64_t ne2;      // ne[2] of both: tokens are (t % ne2, t / ne2) over ne[2] and ne[3]
  const int32_t* positions;     // device [n_tokens]
  const float* freq_factors;    // device [n_dims / 2], or null
  int32_t n_dims;               // even, <= head_dim
  float theta_scale;            // base^(-2 / n_dims), computed on the host as the CPU does
  float freq_scale;
  bool neox;
};

// One block per token: its pairs' cos and sin into shared memory, then every pair of
// every head of each view rotated by one thread.
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
  const int64_t first_pairs = a.x[0].n_heads * half;
  const int64_t n_pairs = first_pairs + a.x[1].n_heads * half;
  for (int64_t k = threadIdx.x; k < n_pairs; k += blockDim.x) {
    const bool second_view = k >= first_pairs;
    const RopeTarget& x = second_view ? a.x[1] : a.x[0];
    const int64_t pair = second_view ? k - first_pairs : k;
    const int64_t h = pair / half;
    const int32_t i = static_cast<int32_t>(pair % half);
    char* token = x.data + (t % a.ne2) * x.nb2 + (t / a.ne2) * x.nb3;
    float* v = reinterpret_cast<float*>(token + h * x.nb1);
    float* first = a.neox ? v + i : v + 2 * i;
    float* second = a.neox ? v + i + half : v + 2 * i + 1;
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float x0 = *first, x1 = *second;
    *first = __fmaf_rn(x0, c, -__fmul_rn(x1, s));
    *second = __fmaf_rn(x0, s, __fmul_rn(x1, c));
  }
}

Status check_rope_view(const TensorView& x, const RopeParams& params) {
  if (!is_f32_rows(x)) return invalid_argument("rope: needs an f32 head view");
  if (params.n_dims <= 0 || params.n_dims % 2 != 0 || params.n_dims > x.ne[0] ||
      params.n_dims > kMaxRopeDims) {
    return invalid_argument("rope: n_dims must be even, positive, at most the head size and 1024");
  }
  if (x.ne[2] * x.ne[3] > kMaxGridX) return invalid_argument("rope: too many tokens");
  return {};
}

RopeTarget target_of(const TensorView& x) {
  return {static_cast<char*>(x.data), x.ne[1], static_cast<int64_t>(x.nb[1]), static_cast<int64_t>(x.nb[2]),
          static_cast<int64_t>(x.nb[3])};
}

// Rotates x (and y, when given: the same tokens) in one launch.
Status rope_views(const Context& ctx, const TensorView& x, const TensorView* y, const int32_t* positions,
                  const RopeParams& params) {
  PAGODA_TRY(check_rope_view(x, params));
  if (y != nullptr) {
    PAGODA_TRY(check_rope_view(*y, params));
    if (y->ne[0] != x.ne[0] || y->ne[2] != x.ne[2] || y->ne[3] != x.ne[3]) {
      return invalid_argument("rope: the two views need one head size and the same tokens");
    }
  }
  const int64_t n_tokens = x.ne[2] * x.ne[3];
  const int64_t n_heads = x.ne[1] + (y != nullptr ? y->ne[1] : 0);
  if (n_tokens == 0 || n_heads == 0) return {};
  if (positions == nullptr) return invalid_argument("rope: needs one position per token");
  RopeArgs a;
  a.x[0] = target_of(x);
  a.x[1] = y != nullptr ? target_of(*y) : RopeTarget{};
  a.ne2 = x.ne[2];
  a.positions = positions;
  a.freq_factors = params.freq_factors;
  a.n_dims = params.n_dims;
  // The CPU's expression, evaluated by the same host library: the same bits.
  a.theta_scale = std::pow(params.freq_base, -2.0f / static_cast<float>(params.n_dims));
  a.freq_scale = params.freq_scale;
  a.neox = params.neox;
  const int64_t n_pairs = n_heads * (params.n_dims / 2);
  const int threads = n_pairs >= kRopeThreads ? kRopeThreads : threads_for_row(n_pairs);
  rope_kernel<<<static_cast<unsigned>(n_tokens), threads, 0, ctx.stream>>>(a);
  return launch_status("rope");
}

}  // namespace

Status rope(const Context& ctx, const TensorView& x, const int32_t* positions, const RopeParams& params) {
  return rope_views(ctx, x, nullptr, positions, params);
}

Status rope_pair(const Context& ctx, const TensorView& a, const TensorView& b, const int32_t* positions,
                 const RopeParams& params) {
  return rope_views(ctx, a, &b, positions, params);
}

}  // namespace pagoda::backend::cuda
