#pragma once
// The kernel of Backend::sample_rows (sample_rows.cu launches it): each row's token on the
// GPU, so that a step of sampling requests
// copies one int per row to the host instead of its logits: the host's sample_row
// (sampling/row_sampling.h), bit for bit. One block per row.
//
// A row with no adjustment and no truncation takes the greedy token (argmax_rows.cu's
// rule) or a draw over the whole row (row_draw.cuh). Otherwise the row's adjusted logits
// are written to a scratch row first (the logits stay as they were, for a row left to
// the host), and a NaN or +inf among them leaves the row to the host. Without truncation
// the draw is over the whole adjusted row. With it, the tokens that can survive are
// gathered into a short list in shared memory (row_select.cuh): the k best for top-k;
// for top-p alone, a head whose weights surely pass the target; for min-p alone, the
// tokens above its threshold, in id order. The sampler's stages then run over that list
// as the host runs them over its candidates: top-p's running sum and the draw's walk by
// one thread in the list's order, their sums as exp_sum takes them (8 partial sums). Only
// top-p over the whole row needs that row's sum, which is taken in parallel; where the
// target lies within its rounding margin of a running sum, the host's sum is taken
// exactly. A list that would pass the capacity leaves the row to the host.
//
// A header of its own so that the host can compile it too: the SIMT emulation test
// (tests/backend/cuda/sample_rows_emulated_test.cpp) runs it on CPU threads.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/row_draw.cuh"
#include "backend/cuda/row_greedy.cuh"
#include "backend/cuda/row_select.cuh"
#include "sampling/row_sampling.h"

// Internal linkage: the launcher and the emulation test each compile their own copy.
namespace pagoda::backend::cuda::row_sampling_kernel {
namespace {


constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

struct SampleRowsArgs {
  F32Rows x;
  int64_t n;
  const RowSampling* rows;              // [rows of the op]
  const LogitAdjustment* adjustments;   // what rows index
  float* adjusted;                      // [rows of the launch][n] scratch, or null when no row adjusts
  int64_t row_begin;                    // the launch's first row
  int32_t* ids;                         // [rows of the op]
  RowLogprobs* logprobs;                // [rows of the op], or null when no row asks
};

struct RowScratch {
  uint64_t items[kRowSamplingCapacity];  // the short list
  uint32_t counts[kDigitValues];
  double masses[kDigitValues];
  RowBest warp_best[kWarps];
  double warp_sums[kWarps];
  HeadChoice head;
  int64_t crossing;
  int uncertain;
  int filled;
  int list_size;
};

// row_sampling.h's adjusted_logit, operation for operation.
__device__ __forceinline__ float adjusted(float logit, const LogitAdjustment& a, float repetition_penalty) {
  if ((a.flags & kAddBias) != 0u) logit = __fadd_rn(logit, a.bias);
  if ((a.flags & kRepeated) != 0u) {
    logit = logit <= 0.0f ? __fmul_rn(logit, repetition_penalty) : __fdiv_rn(logit, repetition_penalty);
  }
  if ((a.flags & kSubtract) != 0u) logit = __fsub_rn(logit, a.subtract);
  return logit;
}

// The sum over the block of every thread's `value`, for every thread. sums: shared [kWarps].
__device__ double block_sum(double value, double* sums) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = value;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < kWarps; ++w) total += sums[w];
  __syncthreads();  // every thread has read the sums before they are written again
  return total;
}

// The sum over the row of the weights softmax_exp(x - max) (temperature 1), taken in
// parallel, for every thread.
__device__ double row_weight_sum(const float* row, int64_t n, float max, RowScratch& s) {
  double mine = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) mine += static_cast<double>(weight(row[i], max, 1.0f));
  return block_sum(mine, s.warp_sums);
}

// Gathers into s.items, ranked, the head of the row choose_head finds for the goal (k
// tokens by_count, else weights reaching mass_goal); false (every thread) where no head
// of at most the capacity reaches it. s.filled may still pass the capacity (ties).
__device__ bool gather_ranked_head(const float* row, int64_t n, float max, bool by_count, int64_t k,
                                   double mass_goal, RowScratch& s) {
  choose_head<kThreads>(row, n, max, by_count, k, mass_goal, s.counts, s.masses, &s.head);
  if (s.head.levels < 0) return false;
  const HeadChoice head = s.head;
  gather_list<kThreads>(
      row, n, [head, max](float v) { return in_head(digits_of(v, max), head.head, head.levels); }, false, s.items,
      &s.filled);
  return true;
}

// Thread 0's `value`, for every thread (two barriers: it may be called again at once).
__device__ int from_thread0(int value, int* slot) {
  if (threadIdx.x == 0) *slot = value;
  __syncthreads();
  const int out = *slot;
  __syncthreads();
  return out;
}

// top-p over the whole row (no top-k before it): the shortest head of the sorted list
// items[0, listed) whose weights at temperature 1 reach p times their sum over the row,
// `approximate` (taken in parallel); with exp_sum's exact partial sums where the margin
// is in doubt. Returns the head's length, or 0 when it is not inside the list (the host
// decides).
__device__ int top_p_of_row(const float* row, int64_t n, float max, float p, double approximate, int listed,
                            RowScratch& s) {
  const auto walk = [&](double target, double margin) {  // thread 0: the head's length, or -1 in doubt
    double mass = 0.0;
    for (int i = 0; i < listed; ++i) {
      const double previous = mass;
      mass += static_cast<double>(softmax_exp(__fsub_rn(unpack_item(s.items[i], false).value, max)));
      if (mass >= target) return mass - target > margin && (i == 0 || target - previous > margin) ? i + 1 : -1;
    }
    return listed == n ? listed : -1;  // short of the target: the whole row stays
  };
  int length = -1;
  if (threadIdx.x == 0) {
    const double target = static_cast<double>(p) * approximate;
    length = walk(target, ldexp(target, -53) * (4.0 * static_cast<double>(n) + 256.0));
  }
  length = from_thread0(length, &s.list_size);
  if (length >= 0) return length;
  const double total = exact_weight_sum([row](int64_t i) { return row[i]; }, n, max, 1.0f, s.warp_sums);
  if (threadIdx.x == 0) length = walk(static_cast<double>(p) * total, -1.0);
  length = from_thread0(length, &s.list_size);
  return length < 0 ? 0 : length;
}

// The token of a truncated row (sample_row's stages) whose adjusted logits are `row`,
// with no NaN or +inf and `max` above -inf.
__device__ int32_t truncated_token(const float* row, int64_t n, float max, const RowSampling& r, RowScratch& s) {
  const bool top_k = r.top_k > 0 && r.top_k < n, top_p = r.top_p < 1.0f, min_p = r.log_min_p > -INFINITY;
  if (top_k && r.top_k > kRowSamplingCapacity) return kLeftToHost;
  const bool id_ordered = !top_k && !top_p;  // min-p alone keeps the row's order
  double row_mass = 0.0;                     // top-p alone: the weights' sum over the row
  if (id_ordered) {
    const float threshold = __fadd_rn(max, r.log_min_p);
    gather_list<kThreads>(row, n, [threshold](float v) { return v >= threshold; }, true, s.items, &s.filled);
  } else {
    double mass_goal = 0.0;
    if (!top_k) {  // a head whose weights surely pass p times their sum over the row
      row_mass = row_weight_sum(row, n, max, s);
      mass_goal = static_cast<double>(r.top_p) * row_mass * (1.0 + 0x1p-20);
    }
    if (!gather_ranked_head(row, n, max, top_k, r.top_k, mass_goal, s)) return kLeftToHost;
  }
  const int filled = s.filled;
  if (filled > kRowSamplingCapacity) return kLeftToHost;
  sort_list<kThreads>(s.items, filled);
  const auto value = [&s, id_ordered](int64_t i) { return unpack_item(s.items[i], id_ordered).value; };
  int size = top_k ? r.top_k : filled;
  if (top_p && top_k && size > 1) {  // over the k best, sorted
    const float front = value(0);
    const double total = exact_weight_sum(value, size, front, 1.0f, s.warp_sums);
    int kept = size;
    if (threadIdx.x == 0) {
      const double target = static_cast<double>(r.top_p) * total;
      double mass = 0.0;
      for (int i = 0; i < size; ++i) {
        mass += static_cast<double>(softmax_exp(__fsub_rn(value(i), front)));
        if (mass >= target) {
          kept = i + 1;
          break;
        }
      }
    }
    size = from_thread0(kept, &s.list_size);
  } else if (top_p && !top_k && n > 1) {
    size = top_p_of_row(row, n, max, r.top_p, row_mass, filled, s);
    if (size == 0) return kLeftToHost;
  }
  if (min_p && !id_ordered) {  // over the sorted head: a shorter head
    int kept = 0;
    if (threadIdx.x == 0) {
      const float threshold = __fadd_rn(value(0), r.log_min_p);
      while (kept < size && value(kept) >= threshold) ++kept;
    }
    size = from_thread0(kept, &s.list_size);
  }
  const float shift = id_ordered ? max : value(0);
  const float scale = __fdiv_rn(1.0f, r.temperature);
  const int64_t index = exact_draw(value, size, shift, scale, r.uniform, s.warp_sums);
  return threadIdx.x == 0 ? unpack_item(s.items[index], id_ordered).token : 0;
}

// Whether any of row[0, n) is a NaN or +inf, for every thread.
__device__ bool any_nan_or_inf(const float* row, int64_t n) {
  bool bad = false;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) bad = bad || isnan(row[i]) || row[i] == INFINITY;
  return __syncthreads_or(bad ? 1 : 0) != 0;
}

// The row's token (sample_row's choice), for thread 0. raw: the row's logits.
__device__ int32_t row_token(const SampleRowsArgs& a, const RowSampling& sampling, const float* raw, RowScratch& s) {
  const int64_t n = a.n;
  const bool truncating = (sampling.top_k > 0 && sampling.top_k < n) || sampling.top_p < 1.0f ||
                          sampling.log_min_p > -INFINITY;
  const float scale = sampling.temperature > 0.0f ? __fdiv_rn(1.0f, sampling.temperature) : 0.0f;
  if (sampling.n_adjustments == 0 && !truncating) {  // as sample_row: greedy_token or draw_token
    const RowBest best = row_best<kThreads>(raw, n, s.warp_best);
    const int32_t greedy = greedy_of(raw, best);
    if (sampling.temperature == 0.0f || greedy < 0) return greedy;
    return static_cast<int32_t>(
        draw_in_row<kThreads>(raw, n, best.value, scale, sampling.uniform, s.warp_sums, &s.crossing, &s.uncertain));
  }
  const float* row = raw;
  if (sampling.n_adjustments > 0) {
    float* out = a.adjusted + static_cast<int64_t>(blockIdx.x) * n;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) out[i] = raw[i];
    __syncthreads();
    const LogitAdjustment* list = a.adjustments + sampling.first_adjustment;
    for (int j = static_cast<int>(threadIdx.x); j < sampling.n_adjustments; j += kThreads) {
      out[list[j].token] = adjusted(raw[list[j].token], list[j], sampling.repetition_penalty);
    }
    __syncthreads();
    row = out;
  }
  if (any_nan_or_inf(row, n)) return kLeftToHost;
  const RowBest best = row_best<kThreads>(row, n, s.warp_best);
  if (!(best.value > -INFINITY)) return -1;
  if (sampling.temperature == 0.0f) return static_cast<int32_t>(best.index);
  if (!truncating) {
    return static_cast<int32_t>(
        draw_in_row<kThreads>(row, n, best.value, scale, sampling.uniform, s.warp_sums, &s.crossing, &s.uncertain));
  }
  return truncated_token(row, n, best.value, sampling, s);
}

// LogSoftmax's log-probabilities of the raw logits (sampling/logprobs.h): of `token` and
// of the `top` most likely, to `out` by thread 0. The normalizer's sum is taken in
// parallel (LogSoftmax sums in a fixed order): the values agree with the host's to
// about 1e-13 before their rounding to float. Returns false (every thread) when the top
// list does not fit the shared list: the host then takes the row.
__device__ bool report_logprobs(const float* raw, int64_t n, int32_t token, int32_t top, RowScratch& s,
                                RowLogprobs* out) {
  const RowBest best = row_best<kThreads>(raw, n, s.warp_best);
  const float max = best.value;
  const double log_denominator = log(row_weight_sum(raw, n, max, s));
  const auto logprob = [=](float v) {
    return static_cast<float>(static_cast<double>(v) - static_cast<double>(max) - log_denominator);
  };
  if (top > 0) {
    if (!gather_ranked_head(raw, n, max, true, top, 0.0, s) || s.filled > kRowSamplingCapacity) return false;
    sort_list<kThreads>(s.items, s.filled);
  }
  if (threadIdx.x == 0) {
    out->chosen = logprob(raw[token]);
    out->n_top = top;
    for (int j = 0; j < top; ++j) {
      const ListItem item = unpack_item(s.items[j], false);
      out->top[j] = TokenLogprob{item.token, logprob(item.value)};
    }
  }
  return true;
}

__global__ void __launch_bounds__(kThreads) sample_rows_kernel(SampleRowsArgs a) {
  __shared__ RowScratch s;
  const int64_t r = a.row_begin + blockIdx.x;
  const RowSampling sampling = a.rows[r];
  const float* raw = a.x.row(r);
  // Log-probabilities of a row with a NaN or +inf are the host's to give.
  const bool left = sampling.logprobs && any_nan_or_inf(raw, a.n);
  int32_t token = left ? kLeftToHost : row_token(a, sampling, raw, s);
  if (sampling.logprobs && !left) {
    token = from_thread0(token, &s.list_size);
    if (token >= 0 && !report_logprobs(raw, a.n, token, sampling.top_logprobs, s, a.logprobs + r)) token = kLeftToHost;
  }
  if (threadIdx.x == 0) a.ids[r] = token;
}

}  // namespace
}  // namespace pagoda::backend::cuda::row_sampling_kernel
