#pragma once
// The greedy token of a row of logits on the GPU, as core/argmax.h finds it on the host,
// for argmax_rows.cu and sample_rows.cu: each thread keeps the largest value it sees in its
// stride and that value's first index (a NaN never ranks: `v > best` is false for it),
// then the block combines them, the larger value winning and the lower index on a tie.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace pagoda::backend::cuda {

struct RowBest {
  float value;
  int64_t index;
};

__device__ __forceinline__ RowBest better(RowBest a, RowBest b) {
  if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

// The row's largest value and its first index, for every thread of the block (which all
// call it: it holds a barrier). warp_best: shared [kThreads / 32]. An all -inf row keeps
// index n.
template <int kThreads>
__device__ RowBest row_best(const float* row, int64_t n, RowBest* warp_best) {
  RowBest best{-INFINITY, n};
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float v = row[i];
    if (v > best.value) best = RowBest{v, i};
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    best = better(best, RowBest{__shfl_xor_sync(0xffffffffu, best.value, offset),
                                __shfl_xor_sync(0xffffffffu, best.index, offset)});
  }
  if (threadIdx.x % 32 == 0) warp_best[threadIdx.x / 32] = best;
  __syncthreads();
  best = warp_best[0];
  for (int w = 1; w < kThreads / 32; ++w) best = better(best, warp_best[w]);
  return best;
}

// The greedy token of a row whose best is `best`: -1 for a NaN first (the host's argmax
// stops there) or nothing above -inf.
__device__ __forceinline__ int32_t greedy_of(const float* row, const RowBest& best) {
  return isnan(row[0]) || !(best.value > -INFINITY) ? -1 : static_cast<int32_t>(best.index);
}

}  // namespace pagoda::backend::cuda
