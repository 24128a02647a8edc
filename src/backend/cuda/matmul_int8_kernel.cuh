#pragma once
// The kernel of the few-token integer products (matmul_vec_int8.cu, which launches it):
// its arguments and its device code, in a header of its own so that a host emulation of
// CUDA threads (tests/backend/cuda/simt_emulation.h) can run the same source where no GPU
// is. See matmul_vec_int8.cu for what it computes and how the work is split.

#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/dynamic_shared.cuh"
#include "backend/cuda/int8_formats_k.cuh"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/matmul_vec_targets.cuh"
#include "backend/cuda/quantize_q8.cuh"

namespace pagoda::backend::cuda::weights::int8_kernel {
// Internal linkage: the kernels' host stubs (nvcc) and their emulation (tests) must not
// share names in one binary.
namespace {

using int8_formats::kPartWords;
using int8_formats::Part;
using int8_formats::XScalars;

constexpr int kRows = 4;  // weight rows per block: each activation load serves kRows rows
constexpr int kMaxThreads = 128;

struct IntArgs {
  VecTargets targets;
  int n_blocks = 0;  // blocks per row
  QuantizedRows x;          // several tokens: x quantized by activations_q8.cu
  const float* x_f32 = nullptr;  // one token: x itself, quantized where it is read
  int64_t y_stride = 0;  // every target's y (and SwiGLU's out)
  int n_tokens = 0;      // 1..kVecMaxTokens
};

// Row r (0..kRows) of block `group`: its target, and its row in it (SwiGLU: its item).
// SwiGLU blocks take kRows / 2 items, gate and up rows alternating.
template <bool kSwiGlu>
__device__ __forceinline__ bool row_of(const IntArgs& a, int64_t group, int r, VecTarget& t, int64_t& index) {
  constexpr int kItems = kSwiGlu ? kRows / 2 : kRows;
  const int64_t item = group * kItems + (kSwiGlu ? r / 2 : r);
  if (item >= a.targets.n_items) return false;
  if constexpr (kSwiGlu) {
    t = r % 2 == 0 ? a.targets.t0 : a.targets.t1;
    index = item;
  } else {
    locate(a.targets, item, t, index);
  }
  return true;
}

// The activation scalars of part c of block b for token t.
template <typename F>
__device__ __forceinline__ XScalars x_scalars(const QuantizedRows& x, int n_blocks, int t, int b, int c) {
  XScalars s;
  const int64_t block = static_cast<int64_t>(t) * n_blocks + b;
  s.d = x.d[block];
  // Sums a block: of 16 values for Q8_K, 32 for the others (sum_values).
  constexpr int64_t kSums = F::kBlockValues / (F::kActivations == ActivationFormat::kQ8_K ? 16 : 32);
  if constexpr (kSums == 1) {
    s.sum[0] = x.sums[block];
    if constexpr (F::kActivations == ActivationFormat::kQ8_1) s.s = x.s[block];
  } else {
#pragma unroll
    for (int run = 0; run < 2; ++run) {
      const int64_t first = block * kSums + F::x_offset(c, run) / 16;
      s.sum[2 * run] = x.sums[first];
      s.sum[2 * run + 1] = x.sums[first + 1];
    }
  }
  return s;
}

// One token: this part's activations quantized from x (block: the f32 values of its
// block), with the arithmetic of activations_q8.cu's kernels (quantize_q8.cuh), so the
// same bits as the several-token path's. The k-quants' four parts of a block quantize it
// together (shuffles: every lane of the warp takes part, inactive ones with zeros).
template <typename F>
__device__ __forceinline__ void quantize_here(const float* block, int c, bool active, int32_t (&x)[kPartWords],
                                              XScalars& xs) {
  if constexpr (F::kParts == 1) {
    float v[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = active ? block[j] : 0.0f;
    const q8::Block32 q = q8::quantize_block32(v);
#pragma unroll
    for (int i = 0; i < 8; ++i) x[i] = static_cast<int32_t>(q.q[i]);
    xs.d = q.d;
    xs.s = q.s;
    xs.sum[0] = q.sum;
  } else {
    const int base[2] = {F::x_offset(c, 0), F::x_offset(c, 1)};
    float v[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) v[j] = active ? block[base[j / 32] + j % 32] : 0.0f;
    const q8::Quarter256 q = q8::quantize_quarter256(v, base);
#pragma unroll
    for (int i = 0; i < kPartWords; ++i) x[i] = static_cast<int32_t>(q.q[i]);
    xs.d = q.d;
#pragma unroll
    for (int g = 0; g < 4; ++g) xs.sum[g] = q.sum[g];
  }
}

template <typename F, bool kSwiGlu, int kTokens>
__global__ void __launch_bounds__(kMaxThreads) matmul_int8_kernel(IntArgs a) {
  PAGODA_DYNAMIC_SHARED(float, block_values);  // [kRows][n_tokens][n_blocks]
  const int64_t group = blockIdx.x;
  const uint8_t* row[kRows];
  const uint8_t* end[kRows];
  bool live[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    VecTarget t;
    int64_t index = 0;
    live[r] = row_of<kSwiGlu>(a, group, r, t, index);
    row[r] = live[r] ? t.w + index * t.row_stride : nullptr;
    end[r] = t.end;
  }
  allow_next_kernel();

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int n_parts = F::kParts * a.n_blocks;
  bool waited = false;
  // Whole warps go round together (the shuffles need every lane); lanes past the last
  // part take part with zeros.
  for (int base = static_cast<int>(threadIdx.x) - lane; base < n_parts; base += static_cast<int>(blockDim.x)) {
    const int part = base + lane;
    const bool active = part < n_parts;
    const int b = part / F::kParts, c = part % F::kParts;
    Part p[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (active && live[r]) {
        F::load(row[r] + static_cast<int64_t>(b) * sizeof(typename F::Block), c, end[r], p[r]);
      } else {
        p[r] = Part{};
      }
    }
    // Weights are read-only: they are on their way before x (which the kernel before
    // this one writes) may be read.
    if (!waited) {
      wait_for_previous_kernel();
      waited = true;
    }
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t >= a.n_tokens) break;
      int32_t x[kPartWords] = {};
      XScalars xs;
      if constexpr (kTokens == 1) {
        quantize_here<F>(a.x_f32 + static_cast<int64_t>(b) * F::kBlockValues, c, active, x, xs);
      } else if (active) {
        const int8_t* xq = a.x.q + static_cast<int64_t>(t) * a.x.n + static_cast<int64_t>(b) * F::kBlockValues;
#pragma unroll
        for (int run = 0; run < F::kRuns; ++run) {
          const uint4* q = reinterpret_cast<const uint4*>(xq + F::x_offset(c, run));
          const uint4 v0 = q[0], v1 = q[1];
          const uint32_t words[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
          for (int i = 0; i < 8; ++i) x[8 * run + i] = static_cast<int32_t>(words[i]);
        }
        xs = x_scalars<F>(a.x, a.n_blocks, t, b, c);
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        int sumi, summ;
        F::sums(p[r], x, xs, sumi, summ);
        // A block's parts are neighbouring lanes: integer sums, exact in any order.
#pragma unroll
        for (int offset = 1; offset < F::kParts; offset *= 2) {
          sumi += __shfl_xor_sync(0xffffffffu, sumi, offset);
          summ += __shfl_xor_sync(0xffffffffu, summ, offset);
        }
        if (active && c == 0 && live[r]) {
          block_values[(r * a.n_tokens + t) * a.n_blocks + b] = F::value(p[r], xs, sumi, summ);
        }
      }
    }
  }
  __syncthreads();
  // Thread r * n_tokens + t adds row r's blocks for token t in order and writes the output.
  const int mine = static_cast<int>(threadIdx.x);
  if (mine >= kRows * a.n_tokens) return;
  const int r = mine / a.n_tokens, t = mine % a.n_tokens;
  if (!live[r] || (kSwiGlu && r % 2 == 1)) return;  // SwiGLU: the gate row's thread writes the item
  VecTarget target;
  int64_t index = 0;
  row_of<kSwiGlu>(a, group, r, target, index);
  const float* values = block_values + (r * a.n_tokens + t) * a.n_blocks;
  float sum = 0.0f;
  for (int b = 0; b < a.n_blocks; ++b) sum = __fadd_rn(sum, values[b]);
  if constexpr (kSwiGlu) {
    const float* up_values = values + a.n_tokens * a.n_blocks;  // row r + 1
    float up = 0.0f;
    for (int b = 0; b < a.n_blocks; ++b) up = __fadd_rn(up, up_values[b]);
    target.y[t * a.y_stride + index] = silu_times(sum, up);
  } else {
    target.y[t * a.y_stride + index] = sum;
  }
}

// The kernel's launch over a's work: a block per kRows rows (SwiGLU: kRows / 2 items, gate
// and up rows alternating), as many threads as a row has parts (whole warps, at most
// kMaxThreads), shared memory for the blocks' values.
struct LaunchShape {
  int64_t blocks = 0;
  int threads = 0;
  size_t shared_bytes = 0;
};
template <typename F, bool kSwiGlu>
inline LaunchShape launch_shape(const IntArgs& a) {
  constexpr int64_t kItems = kSwiGlu ? kRows / 2 : kRows;
  const int parts = F::kParts * a.n_blocks;
  LaunchShape shape;
  shape.blocks = (a.targets.n_items + kItems - 1) / kItems;
  shape.threads = parts >= kMaxThreads ? kMaxThreads : (parts + 31) / 32 * 32;
  shape.shared_bytes = sizeof(float) * kRows * static_cast<size_t>(a.n_tokens) * static_cast<size_t>(a.n_blocks);
  return shape;
}

}  // namespace
}  // namespace pagoda::backend::cuda::weights::int8_kernel
