// Each row's token on the GPU (Backend::draw_rows), so that a step of sampling requests
// copies one int per row to the host instead of its logits. One block per row.
//
// Temperature 0: the greedy token, as argmax_rows.cu finds it. Above 0: the draw the
// host makes (core/draw.h's draw_token): weights w_i = softmax_exp((x_i - max) / T), the
// operations of core/softmax_exp.h, and the first index whose running sum in double
// passes uniform * (their sum). The host sums in a fixed sequential order; here each
// thread sums a contiguous run and the runs' sums are scanned, which rounds differently:
// the running sums and the sum differ from the host's by at most about 3 n 2^-53 of the
// sum. So the crossing found is the host's whenever the target lies farther than the
// margin (4 n + 256) 2^-53 of the sum from the running sums on either side of it, which
// fails for a share of draws of about 8 n^2 2^-53 (2e-5 of them for a 128k vocabulary).
// Then, and for rows whose sum is not finite, the block repeats the host's walk exactly:
// 8 threads its 8 partial sums, one thread the sequential running sum (about a
// millisecond for a 128k vocabulary).

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/ops.h"
#include "backend/cuda/row_greedy.cuh"

namespace pagoda::backend::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

// core/softmax_exp.h's softmax_exp, operation for operation.
__device__ __forceinline__ float softmax_exp(float x) {
  constexpr float kMin = -87.0f, kLog2e = 1.44269504088896341f, kRound = 12582912.0f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kC[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                          5.0000001201e-1f, 1.0f, 1.0f};
  const float clamped = kMin > x ? kMin : x;
  const float t = __fmaf_rn(clamped, kLog2e, kRound);
  const float n = __fsub_rn(t, kRound);
  float r = __fmaf_rn(n, -kLn2Hi, clamped);
  r = __fmaf_rn(n, -kLn2Lo, r);
  float p = 1.9875691500e-4f;
#pragma unroll
  for (const float c : kC) p = __fmaf_rn(p, r, c);
  const uint32_t exponent = (__float_as_uint(t) - __float_as_uint(kRound) + 127u) << 23;
  const float y = __fmul_rn(p, __uint_as_float(exponent));
  return x < kMin ? 0.0f : y;
}

// exp_sum's weight of value x: softmax_exp((x - shift) * scale).
__device__ __forceinline__ float weight(float x, float shift, float scale) {
  return softmax_exp(__fmul_rn(__fsub_rn(x, shift), scale));
}

// The host's draw, exactly (core/exp_sum.cpp's 8 partial sums in their combining order,
// then draw_index's sequential walk and its fallback). Called by the whole block:
// threads 0..7 take a partial sum each, thread 0 the walk; thread 0 gets the index.
__device__ int64_t exact_draw(const float* row, int64_t n, float max, float scale, double uniform, double* sums) {
  if (threadIdx.x < 8) {
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += 8) sum += static_cast<double>(weight(row[i], max, scale));
    sums[threadIdx.x] = sum;
  }
  __syncthreads();
  if (threadIdx.x != 0) return -1;
  const double total = ((sums[0] + sums[4]) + (sums[2] + sums[6])) + ((sums[1] + sums[5]) + (sums[3] + sums[7]));
  const double target = uniform * total;
  double cumulative = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    cumulative += static_cast<double>(weight(row[i], max, scale));
    if (target < cumulative) return i;
  }
  for (int64_t i = n; i-- > 0;) {
    if (weight(row[i], max, scale) > 0.0f) return i;
  }
  return 0;
}

__global__ void __launch_bounds__(kThreads) draw_rows_kernel(F32Rows x, int64_t n, const RowDraw* draws, int32_t* ids) {
  __shared__ RowBest warp_best[kWarps];
  __shared__ double warp_sums[kWarps];
  __shared__ int64_t crossing;
  __shared__ int uncertain;
  const float* row = x.row(blockIdx.x);
  const RowDraw draw = draws[blockIdx.x];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x == 0) {
    crossing = INT64_MAX;
    uncertain = 0;
  }

  // The greedy token (argmax_rows.cu's rule), and the largest logit.
  const RowBest best = row_best<kThreads>(row, n, warp_best);
  const int32_t greedy = greedy_of(row, best);
  if (draw.temperature == 0.0f || greedy < 0) {
    if (threadIdx.x == 0) ids[blockIdx.x] = greedy;
    return;  // the whole block
  }
  const float max = best.value;
  const float scale = __fdiv_rn(1.0f, draw.temperature);

  // Each thread's contiguous run, its sum, and the runs before it (a block scan).
  const int64_t per_thread = (n + kThreads - 1) / kThreads;
  const int64_t begin = min(n, static_cast<int64_t>(threadIdx.x) * per_thread), end = min(n, begin + per_thread);
  double run_sum = 0.0;
  for (int64_t i = begin; i < end; ++i) run_sum += static_cast<double>(weight(row[i], max, scale));
  double inclusive = run_sum;
  for (int offset = 1; offset < 32; offset *= 2) {
    const double other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  double before_warp = 0.0, total = 0.0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before_warp += warp_sums[w];
    total += warp_sums[w];
  }
  const double before = before_warp + (inclusive - run_sum);
  const double target = draw.uniform * total;
  const double margin = ldexp(total, -53) * (4.0 * static_cast<double>(n) + 256.0);
  if (isfinite(total) && total > 0.0 && before <= target && target < before + run_sum) {
    // This run holds the crossing (the runs' sums are monotone): find it, and whether
    // the host's roundings could put it elsewhere.
    double cumulative = before;
    for (int64_t i = begin; i < end; ++i) {
      const double previous = cumulative;
      cumulative += static_cast<double>(weight(row[i], max, scale));
      if (target < cumulative) {
        atomicMin(reinterpret_cast<unsigned long long*>(&crossing), static_cast<unsigned long long>(i));
        if (!(cumulative - target > margin && target - previous > margin)) atomicExch(&uncertain, 1);
        break;
      }
    }
  }
  __syncthreads();
  if (crossing != INT64_MAX && uncertain == 0) {  // the whole block
    if (threadIdx.x == 0) ids[blockIdx.x] = static_cast<int32_t>(crossing);
    return;
  }
  const int64_t index = exact_draw(row, n, max, scale, draw.uniform, warp_sums);
  if (threadIdx.x == 0) ids[blockIdx.x] = static_cast<int32_t>(index);
}

}  // namespace

Status draw_rows(const Context& ctx, const TensorView& x, const RowDraw* draws, const TensorView& ids) {
  const int64_t rows = x.n_rows();
  if (!is_f32_rows(x) || x.ne[0] <= 0 || rows > INT32_MAX || ids.data == nullptr || ids.type != DType::I32 ||
      ids.ne[0] != rows || ids.n_rows() != 1 || (rows > 0 && draws == nullptr)) {
    return invalid_argument("draw_rows: needs f32 rows, one draw and one I32 id per row");
  }
  if (rows == 0) return {};
  draw_rows_kernel<<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream>>>(rows_of(x), x.ne[0], draws,
                                                                             static_cast<int32_t*>(ids.data));
  return launch_status("draw_rows");
}

}  // namespace pagoda::backend::cuda
