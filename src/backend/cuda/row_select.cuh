#pragma once
// The short list of a truncated row on the GPU, for sample_rows.cu: which tokens can
// survive top-k or top-p (a head of the row in the sampler's order: larger logit first,
// lower id on a tie), gathered into shared memory and sorted there.
//
// The head is found without sorting the row: a value x's distance below the row's
// largest logit, t = max - x, is written in base 256 as four digits (its integer part,
// then three bytes of fraction; t >= 256, -inf included, is all 255s: weights that far
// down are 0 at any temperature above 0.34). Every step of that is exact in float, so
// the digits grow with t: the tokens whose digits come first are a head of the
// sampler's order, ties all in or all out. Up to four passes over the row count the
// tokens and sum their weights per digit (the first digit, then the next within the
// chosen one) until a head reaches the goal (k tokens, or weights that surely pass
// top-p's target) with at most kRowSamplingCapacity tokens.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/row_draw.cuh"
#include "sampling/row_sampling.h"

namespace pagoda::backend::cuda {

inline constexpr int kSelectDigits = 4;
inline constexpr int kDigitValues = 256;

// Larger float, larger key; -0 keys as +0 (the sampler ranks them equal).
__device__ __forceinline__ uint32_t order_key(float v) {
  const uint32_t bits = __float_as_uint(v == 0.0f ? 0.0f : v);
  return (bits & 0x80000000u) != 0u ? ~bits : bits | 0x80000000u;
}
__device__ __forceinline__ float key_value(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) != 0u ? key & 0x7fffffffu : ~key);
}

// A listed token as one 64-bit word that sorts (descending) in the list's order: by
// logit, then lower id (ranked), or by lower id alone (in id order).
__device__ __forceinline__ uint64_t ranked_item(float v, int32_t token) {
  return (static_cast<uint64_t>(order_key(v)) << 32) | (0xffffffffu - static_cast<uint32_t>(token));
}
__device__ __forceinline__ uint64_t id_ordered_item(float v, int32_t token) {
  return (static_cast<uint64_t>(0xffffffffu - static_cast<uint32_t>(token)) << 32) | order_key(v);
}
struct ListItem {
  float value;
  int32_t token;
};
__device__ __forceinline__ ListItem unpack_item(uint64_t item, bool id_ordered) {
  const auto high = static_cast<uint32_t>(item >> 32), low = static_cast<uint32_t>(item);
  if (id_ordered) return {key_value(low), static_cast<int32_t>(0xffffffffu - high)};
  return {key_value(high), static_cast<int32_t>(0xffffffffu - low)};
}

struct Digits {
  uint32_t d[kSelectDigits];
};

__device__ __forceinline__ Digits digits_of(float x, float max) {
  const float t = __fsub_rn(max, x);
  if (!(t < 256.0f)) return {{255u, 255u, 255u, 255u}};
  Digits out;
  float rest = t;
#pragma unroll
  for (int level = 0; level < kSelectDigits; ++level) {
    const uint32_t digit = min(static_cast<uint32_t>(rest), 255u);
    out.d[level] = digit;
    rest = __fmul_rn(__fsub_rn(rest, static_cast<float>(digit)), 256.0f);
  }
  return out;
}

// Whether x's first `levels` digits come before or equal `head`'s (x is in the head).
__device__ __forceinline__ bool in_head(const Digits& x, const Digits& head, int levels) {
  for (int level = 0; level < levels; ++level) {
    if (x.d[level] != head.d[level]) return x.d[level] < head.d[level];
  }
  return true;
}

// Whether x's first `levels` digits are head's.
__device__ __forceinline__ bool same_digits(const Digits& x, const Digits& head, int levels) {
  for (int level = 0; level < levels; ++level) {
    if (x.d[level] != head.d[level]) return false;
  }
  return true;
}

// The block's head: on return (every thread) choice->levels is how many digits of
// choice->head define it and choice->size its token count, or levels < 0 when no head of
// at most the capacity reaches the goal. Goal: by_count, k tokens; else the sum of the
// weights softmax_exp(x - max) of its tokens reaching mass_goal (each bin's sum taken in
// parallel, so rounded in no fixed order: the caller's goal leaves room for that).
// counts, masses: shared [kDigitValues].
struct HeadChoice {
  Digits head;
  int levels;
  int64_t size;
};

template <int kThreads>
__device__ void choose_head(const float* row, int64_t n, float max, bool by_count, int64_t k, double mass_goal,
                            uint32_t* counts, double* masses, HeadChoice* choice) {
  if (threadIdx.x == 0) *choice = HeadChoice{Digits{}, -1, 0};
  int64_t above_count = 0;  // thread 0's: tokens in the digits before the chosen ones
  double above_mass = 0.0;
  for (int level = 0; level < kSelectDigits; ++level) {
    for (int i = static_cast<int>(threadIdx.x); i < kDigitValues; i += kThreads) {
      counts[i] = 0u;
      masses[i] = 0.0;
    }
    __syncthreads();
    const Digits head = choice->head;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) {
      const float v = row[i];
      const Digits x = digits_of(v, max);
      if (same_digits(x, head, level)) {
        atomicAdd(&counts[x.d[level]], 1u);
        if (!by_count) atomicAdd(&masses[x.d[level]], static_cast<double>(softmax_exp(__fsub_rn(v, max))));
      }
    }
    __syncthreads();
    bool settled = false;
    if (threadIdx.x == 0) {
      int64_t count = 0;
      double mass = 0.0;
      int chosen = -1;
      for (int digit = 0; digit < kDigitValues; ++digit) {
        const int64_t c = counts[digit];
        const double m = masses[digit];
        if (by_count ? above_count + count + c >= k : above_mass + mass + m >= mass_goal) {
          chosen = digit;
          break;
        }
        count += c;
        mass += m;
      }
      if (chosen < 0) {
        choice->levels = -1;  // the goal is out of reach: the host decides
        settled = true;
      } else {
        choice->head.d[level] = static_cast<uint32_t>(chosen);
        above_count += count;
        above_mass += mass;
        const int64_t size = above_count + counts[chosen];
        if (size <= kRowSamplingCapacity) {
          *choice = HeadChoice{choice->head, level + 1, size};
          settled = true;
        } else if (level + 1 == kSelectDigits) {
          choice->levels = -1;  // ties past the capacity
          settled = true;
        }
      }
    }
    if (__syncthreads_or(settled ? 1 : 0) != 0) return;
  }
}

// Gathers the head's tokens into items ([kRowSamplingCapacity]; `filled` the count) in
// no particular order, as ranked or id-ordered items. member(x): whether x is listed.
template <int kThreads, typename Member>
__device__ void gather_list(const float* row, int64_t n, Member member, bool id_ordered, uint64_t* items,
                            int* filled) {
  if (threadIdx.x == 0) *filled = 0;
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t base = 0; base < n; base += kThreads) {
    const int64_t i = base + threadIdx.x;
    const float v = i < n ? row[i] : 0.0f;
    const bool listed = i < n && member(v);
    const uint32_t ballot = __ballot_sync(0xffffffffu, listed);
    if (ballot == 0u) continue;
    int first = 0;
    if (lane == 0) first = atomicAdd(filled, __popc(ballot));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (listed) {
      const int slot = first + __popc(ballot & ((1u << lane) - 1u));
      const auto token = static_cast<int32_t>(i);
      if (slot < kRowSamplingCapacity) items[slot] = id_ordered ? id_ordered_item(v, token) : ranked_item(v, token);
    }
  }
  __syncthreads();
}

// Sorts items[0, count) descending (a bitonic sort over the next power of two, padded
// with 0, which no item equals). count <= kRowSamplingCapacity.
template <int kThreads>
__device__ void sort_list(uint64_t* items, int count) {
  int size = 1;
  while (size < count) size *= 2;
  for (int i = count + static_cast<int>(threadIdx.x); i < size; i += kThreads) items[i] = 0u;
  __syncthreads();
  for (int k = 2; k <= size; k *= 2) {
    for (int j = k / 2; j > 0; j /= 2) {
      for (int i = static_cast<int>(threadIdx.x); i < size; i += kThreads) {
        const int partner = i ^ j;
        if (partner <= i) continue;
        const uint64_t a = items[i], b = items[partner];
        if ((i & k) == 0 ? a < b : a > b) {
          items[i] = b;
          items[partner] = a;
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace pagoda::backend::cuda
