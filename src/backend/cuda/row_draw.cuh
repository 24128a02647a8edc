#pragma once
// A temperature draw over a row of values on the GPU, as the host draws it
// (sampling/draw.h's draw_token, core/exp_sum.h's weights and sums), for sample_rows.cu:
// weights w_i = softmax_exp((x_i - max) / T) with the operations of core/softmax_exp.h,
// and the first index whose running sum in double passes uniform * (their sum).
//
// Over a whole row (draw_in_row) the host sums in a fixed sequential order; here each
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

namespace pagoda::backend::cuda {

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

// core/exp_sum.cpp's combination of its 8 partial sums (value i in sum i % 8).
__device__ __forceinline__ double combine_partial_sums(const double* sums) {
  return ((sums[0] + sums[4]) + (sums[2] + sums[6])) + ((sums[1] + sums[5]) + (sums[3] + sums[7]));
}

// exp_sum's sum of the weights of value(0), ..., value(n - 1) with `shift` and `scale`,
// exactly: threads 0..7 of the block take a partial sum each, thread 0 combines them.
// Called by the whole block (it holds a barrier); `sums`: shared [8]. Thread 0 gets the
// sum.
template <typename Value>
__device__ double exact_weight_sum(Value value, int64_t n, float shift, float scale, double* sums) {
  if (threadIdx.x < 8) {
    double sum = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += 8) sum += static_cast<double>(weight(value(i), shift, scale));
    sums[threadIdx.x] = sum;
  }
  __syncthreads();
  return threadIdx.x == 0 ? combine_partial_sums(sums) : 0.0;
}

// draw_index's walk over the weights of value(0), ..., value(n - 1), by one thread: the
// first index whose running sum exceeds uniform * total, else the last of nonzero
// weight, else 0.
template <typename Value>
__device__ int64_t walk_draw(Value value, int64_t n, float shift, float scale, double total, double uniform) {
  const double target = uniform * total;
  double cumulative = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    cumulative += static_cast<double>(weight(value(i), shift, scale));
    if (target < cumulative) return i;
  }
  for (int64_t i = n; i-- > 0;) {
    if (weight(value(i), shift, scale) > 0.0f) return i;
  }
  return 0;
}

// The host's draw over the values exactly (exp_sum's sum, then draw_index's walk). Called
// by the whole block; thread 0 gets the index. sums: shared [8].
template <typename Value>
__device__ int64_t exact_draw(Value value, int64_t n, float shift, float scale, double uniform, double* sums) {
  const double total = exact_weight_sum(value, n, shift, scale, sums);
  return threadIdx.x == 0 ? walk_draw(value, n, shift, scale, total, uniform) : -1;
}

// The draw over a whole row of n values whose largest is `max`, as described above.
// Called by the whole block of kThreads; every thread gets the index. warp_sums: shared
// [kThreads / 32] doubles (at least 8); crossing, uncertain: shared scratch.
template <int kThreads>
__device__ int64_t draw_in_row(const float* row, int64_t n, float max, float scale, double uniform, double* warp_sums,
                               int64_t* crossing, int* uncertain) {
  constexpr int kWarps = kThreads / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x == 0) {
    *crossing = INT64_MAX;
    *uncertain = 0;
  }
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
  const double target = uniform * total;
  const double margin = ldexp(total, -53) * (4.0 * static_cast<double>(n) + 256.0);
  if (isfinite(total) && total > 0.0 && before <= target && target < before + run_sum) {
    // This run holds the crossing (the runs' sums are monotone): find it, and whether
    // the host's roundings could put it elsewhere.
    double cumulative = before;
    for (int64_t i = begin; i < end; ++i) {
      const double previous = cumulative;
      cumulative += static_cast<double>(weight(row[i], max, scale));
      if (target < cumulative) {
        atomicMin(reinterpret_cast<unsigned long long*>(crossing), static_cast<unsigned long long>(i));
        if (!(cumulative - target > margin && target - previous > margin)) atomicExch(uncertain, 1);
        break;
      }
    }
  }
  __syncthreads();
  const int64_t found = *crossing;
  const bool certain = found != INT64_MAX && *uncertain == 0;
  __syncthreads();  // every thread has read them before anyone writes them again
  if (certain) return found;
  __shared__ int64_t exact;
  const int64_t index = exact_draw([row](int64_t i) { return row[i]; }, n, max, scale, uniform, warp_sums);
  if (threadIdx.x == 0) exact = index;
  __syncthreads();
  return exact;
}

}  // namespace pagoda::backend::cuda
