// y = x W^T for a few tokens of Q4_K, Q5_K or Q6_K weights, multiplied as the CPU's scalar
// dot products (quant/dot_k_scalar.cpp) multiply them: x quantized to Q8_K
// (activations_q8k.cu), each 256-value block's sums taken in integers (dp4a), the block's
// value in f32 with the CPU's operations, and a row's blocks added in order. So an output
// is the same bits as quant's scalar dot product of the row with x's Q8_K row, whatever
// the other tokens or rows of the call (batch invariance).
//
// Work: a thread takes a quarter of a block (64 values: Q4_K / Q5_K sub-blocks 2c and
// 2c + 1, the low and high nibbles of the same 32 bytes; Q6_K half c / 2, rows c % 2 and
// c % 2 + 2 of 32 values) of kRows weight rows at once, so that each activation load
// serves kRows rows; the four quarters of a block sit in four neighbouring lanes, which
// add their integer sums by shuffles. The block's value goes to shared memory, and one
// thread per (row, token) adds the row's blocks in order. A block of 32 to 128 threads,
// as many as a row has quarters.

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "backend/cuda/activations_q8k.h"
#include "backend/cuda/launch_order.cuh"
#include "backend/cuda/matmul_vec_targets.cuh"
#include "backend/cuda/quant_pieces_k.cuh"

namespace pagoda::backend::cuda::weights {
namespace {

constexpr int kRows = 4;          // weight rows per block: each activation load serves kRows rows
constexpr int kMaxThreads = 128;
constexpr int kMaxBlocks = 64;    // 256-value blocks per row: rows of up to 16384 values
constexpr int kQuarterWords = 16; // 64 int8 weights as 16 words of 4

struct K8Args {
  VecTargets targets;
  int n_blocks = 0;       // 256-value blocks per row
  Q8kRows x;
  int64_t y_stride = 0;   // every target's y (and SwiGLU's out)
  int n_tokens = 0;       // 1..kVecMaxTokens
};

// A quarter of a weight block in integers: w[0..7] and w[8..15] are two runs of 32
// values, four to a word; scale[k] multiplies the integer dot of words 4k .. 4k + 3
// (Q6_K: a scale per 16 values) or, with kPerRun, scale[0] and scale[1] the two runs
// (Q4_K, Q5_K, which also subtract min[r] times the run's activation sum).
struct Quarter {
  int32_t w[kQuarterWords];
  int scale[4];
  int min[2];
  float d, dmin;
};

// The offset (in values) of run r (0, 1) of quarter c in a 256-value block.
template <DType T>
__device__ __forceinline__ int run_offset(int c, int r) {
  if constexpr (T == DType::Q6_K) return 128 * (c / 2) + 32 * (c % 2) + 64 * r;
  return 64 * c + 32 * r;
}

__device__ __forceinline__ uint32_t word_of(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// 8 words from a 2-byte aligned address: 9 aligned words (the ninth inside the block, as
// every use below leaves room), shifted into place.
__device__ __forceinline__ void load_8_words_2_aligned(const uint8_t* p, uint32_t (&out)[8]) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  const auto* aligned = reinterpret_cast<const uint32_t*>(address & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>(address & 3) * 8;
  uint32_t raw[9];
#pragma unroll
  for (int i = 0; i < 9; ++i) raw[i] = __ldg(aligned + i);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = __funnelshift_r(raw[i], raw[i + 1], shift);
}

template <DType T>
struct K8Format;

// Q4_K and Q5_K: value 64 c + l is the low nibble of qs[32 c + l], 64 c + 32 + l its high
// nibble (Q5_K: plus 16 for bits 2 c and 2 c + 1 of qh[l]); scales and minimums of sub-
// blocks 2 c, 2 c + 1 from the packed 12 bytes.
template <DType T>
struct K4Format {
  using Block = std::conditional_t<T == DType::Q4_K, quant::BlockQ4_K, quant::BlockQ5_K>;
  static constexpr bool kHasMin = true;
  static constexpr int kAlign = 16;
  __device__ static void load(const uint8_t* block, int c, Quarter& q) {
    const uint4 head = __ldg(reinterpret_cast<const uint4*>(block));
    const uint4* qs = reinterpret_cast<const uint4*>(block + offsetof(Block, qs) + 32 * c);
    const uint4 q0 = __ldg(qs), q1 = __ldg(qs + 1);
    uint4 h0 = make_uint4(0, 0, 0, 0), h1 = h0;
    if constexpr (T == DType::Q5_K) {
      const uint4* qh = reinterpret_cast<const uint4*>(block + offsetof(Block, qh));
      h0 = __ldg(qh);
      h1 = __ldg(qh + 1);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t bytes = i < 4 ? word_of(q0, i) : word_of(q1, i - 4);
      uint32_t low = bytes & 0x0F0F0F0Fu, high = (bytes >> 4) & 0x0F0F0F0Fu;
      if constexpr (T == DType::Q5_K) {
        const uint32_t bits = i < 4 ? word_of(h0, i) : word_of(h1, i - 4);
        low |= ((bits >> (2 * c)) & 0x01010101u) << 4;
        high |= ((bits >> (2 * c + 1)) & 0x01010101u) << 4;
      }
      q.w[i] = static_cast<int32_t>(low);
      q.w[8 + i] = static_cast<int32_t>(high);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int j = 2 * c + r;  // dot_scales::unpack_q4_K, one sub-block
      using pieces_detail::k4_scale_byte;
      if (j < 4) {
        q.scale[r] = static_cast<int>(k4_scale_byte(head, j) & 63);
        q.min[r] = static_cast<int>(k4_scale_byte(head, j + 4) & 63);
      } else {
        q.scale[r] = static_cast<int>((k4_scale_byte(head, j + 4) & 0xF) | ((k4_scale_byte(head, j - 4) >> 6) << 4));
        q.min[r] = static_cast<int>((k4_scale_byte(head, j + 4) >> 4) | ((k4_scale_byte(head, j) >> 6) << 4));
      }
    }
    q.d = pieces_detail::half_bits_to_f32(head.x);
    q.dmin = pieces_detail::half_bits_to_f32(head.x >> 16);
  }
};

template <>
struct K8Format<DType::Q4_K> : K4Format<DType::Q4_K> {};
template <>
struct K8Format<DType::Q5_K> : K4Format<DType::Q5_K> {};

// Q6_K: in half h = c / 2, value 128 h + 32 r + l takes its low 4 bits from
// ql[64 h + 32 (r % 2) + l] (low nibble for r < 2) and its high 2 bits from bits 2 r of
// qh[32 h + l], stored offset by 32; quarter c holds r = c % 2 and c % 2 + 2. Scales are
// int8, one per 16 values. 210-byte blocks: 2-byte alignment.
template <>
struct K8Format<DType::Q6_K> {
  using Block = quant::BlockQ6_K;
  static constexpr bool kHasMin = false;
  static constexpr int kAlign = 2;
  __device__ static void load(const uint8_t* block, int c, Quarter& q) {
    const int h = c / 2, m = c % 2;
    uint32_t ql[8], qh[8];
    load_8_words_2_aligned(block + offsetof(Block, ql) + 64 * h + 32 * m, ql);
    load_8_words_2_aligned(block + offsetof(Block, qh) + 32 * h, qh);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t a = (ql[i] & 0x0F0F0F0Fu) | (((qh[i] >> (2 * m)) & 0x03030303u) << 4);
      const uint32_t b = ((ql[i] >> 4) & 0x0F0F0F0Fu) | (((qh[i] >> (2 * m + 4)) & 0x03030303u) << 4);
      q.w[i] = static_cast<int32_t>(__vsub4(a, 0x20202020u));  // bytewise q - 32, each in [-32, 31]
      q.w[8 + i] = static_cast<int32_t>(__vsub4(b, 0x20202020u));
    }
    // Scales of groups 8 h + 2 m, +1 (run 0) and 8 h + 2 m + 4, +5 (run 1): two 16-bit loads.
    const uint8_t* scales = block + offsetof(Block, scales) + 8 * h + 2 * m;
    const uint32_t s01 = pieces_detail::ldg_u16(scales), s45 = pieces_detail::ldg_u16(scales + 4);
    q.scale[0] = static_cast<int8_t>(s01 & 0xFF);
    q.scale[1] = static_cast<int8_t>(s01 >> 8);
    q.scale[2] = static_cast<int8_t>(s45 & 0xFF);
    q.scale[3] = static_cast<int8_t>(s45 >> 8);
    q.min[0] = q.min[1] = 0;
    q.d = pieces_detail::half_bits_to_f32(pieces_detail::ldg_u16(block + offsetof(Block, d)));
    q.dmin = 0.0f;
  }
};

// The block's integer sums over this quarter for token t: sumi (scales times dots) and
// summ (minimums times activation sums).
template <DType T>
__device__ __forceinline__ void quarter_sums(const Quarter& q, const int32_t (&x)[kQuarterWords], const int32_t (&xs)[2],
                                             int& sumi, int& summ) {
  int dots[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    int dot = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) dot = __dp4a(q.w[4 * k + i], x[4 * k + i], dot);
    dots[k] = dot;
  }
  if constexpr (K8Format<T>::kHasMin) {
    sumi = q.scale[0] * (dots[0] + dots[1]) + q.scale[1] * (dots[2] + dots[3]);
    summ = q.min[0] * xs[0] + q.min[1] * xs[1];
  } else {
    sumi = q.scale[0] * dots[0] + q.scale[1] * dots[1] + q.scale[2] * dots[2] + q.scale[3] * dots[3];
    summ = 0;
  }
}

// The block's f32 value from its integer sums, as the CPU computes it.
template <DType T>
__device__ __forceinline__ float block_value(const Quarter& q, float xd, int sumi, int summ) {
  const float main = __fmul_rn(__fmul_rn(q.d, xd), static_cast<float>(sumi));
  if constexpr (!K8Format<T>::kHasMin) return main;
  return __fsub_rn(main, __fmul_rn(__fmul_rn(q.dmin, xd), static_cast<float>(summ)));
}

// Row r (0..kRows) of block `group`: its weight row, where its sum goes, and (SwiGLU)
// its item. SwiGLU blocks take kRows / 2 items, gate and up rows alternating.
template <bool kSwiGlu>
__device__ __forceinline__ bool row_of(const K8Args& a, int64_t group, int r, const uint8_t*& row, float*& y,
                                       int64_t& index) {
  constexpr int kItems = kSwiGlu ? kRows / 2 : kRows;
  const int64_t item = group * kItems + (kSwiGlu ? r / 2 : r);
  if (item >= a.targets.n_items) return false;
  VecTarget t;
  if constexpr (kSwiGlu) {
    t = r % 2 == 0 ? a.targets.t0 : a.targets.t1;
    index = item;
  } else {
    locate(a.targets, item, t, index);
  }
  row = t.w + index * t.row_stride;
  y = t.y;
  return true;
}

template <DType T, bool kSwiGlu, int kTokens>
__global__ void __launch_bounds__(kMaxThreads) matmul_k8_kernel(K8Args a) {
  using Format = K8Format<T>;
  __shared__ float block_values[kRows][kTokens][kMaxBlocks];
  const int64_t group = blockIdx.x;
  const uint8_t* row[kRows];
  bool live[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    float* y;
    int64_t index;
    live[r] = row_of<kSwiGlu>(a, group, r, row[r], y, index);
  }
  allow_next_kernel();

  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int n_quarters = 4 * a.n_blocks;
  bool waited = false;
  // Whole warps go round together (the shuffles need every lane); lanes past the last
  // quarter take part with zeros.
  for (int base = static_cast<int>(threadIdx.x) - lane; base < n_quarters; base += static_cast<int>(blockDim.x)) {
    const int quarter = base + lane;
    const bool active = quarter < n_quarters;
    const int b = quarter / 4, c = quarter % 4;
    Quarter q[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (active && live[r]) {
        Format::load(row[r] + static_cast<int64_t>(b) * sizeof(typename Format::Block), c, q[r]);
      } else {
        q[r] = Quarter{};
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
      int32_t x[kQuarterWords] = {};
      int32_t xs[2] = {0, 0};
      float xd = 0.0f;
      if (active) {
        const int8_t* xq = a.x.q + static_cast<int64_t>(t) * a.x.n + static_cast<int64_t>(b) * kQ8kValues;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const uint4* p = reinterpret_cast<const uint4*>(xq + run_offset<T>(c, r));
          const uint4 v0 = p[0], v1 = p[1];
          for (int i = 0; i < 4; ++i) {
            x[8 * r + i] = static_cast<int32_t>(word_of(v0, i));
            x[8 * r + 4 + i] = static_cast<int32_t>(word_of(v1, i));
          }
        }
        const int64_t sums = (static_cast<int64_t>(t) * a.n_blocks + b) * (kQ8kValues / kQ8kSumValues);
        if constexpr (Format::kHasMin) {
          xs[0] = a.x.sums[sums + 2 * c];
          xs[1] = a.x.sums[sums + 2 * c + 1];
        }
        xd = a.x.d[static_cast<int64_t>(t) * a.n_blocks + b];
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        int sumi, summ;
        quarter_sums<T>(q[r], x, xs, sumi, summ);
        // The block's four quarters are lanes 4 (lane / 4) .. + 3: integer sums, exact in
        // any order.
        sumi += __shfl_xor_sync(0xffffffffu, sumi, 1);
        sumi += __shfl_xor_sync(0xffffffffu, sumi, 2);
        summ += __shfl_xor_sync(0xffffffffu, summ, 1);
        summ += __shfl_xor_sync(0xffffffffu, summ, 2);
        if (active && c == 0 && live[r]) block_values[r][t][b] = block_value<T>(q[r], xd, sumi, summ);
      }
    }
  }
  __syncthreads();
  // Thread r * kTokens + t adds row r's blocks for token t in order and writes the output.
  const int mine = static_cast<int>(threadIdx.x);
  if (mine >= kRows * kTokens) return;
  const int r = mine / kTokens, t = mine % kTokens;
  if (t >= a.n_tokens || !live[r] || (kSwiGlu && r % 2 == 1)) return;  // SwiGLU: the gate row's thread writes the item
  const uint8_t* weight_row;
  float* y;
  int64_t index;
  row_of<kSwiGlu>(a, group, r, weight_row, y, index);
  float sum = 0.0f;
  for (int b = 0; b < a.n_blocks; ++b) sum = __fadd_rn(sum, block_values[r][t][b]);
  if constexpr (kSwiGlu) {
    float up = 0.0f;
    for (int b = 0; b < a.n_blocks; ++b) up = __fadd_rn(up, block_values[r + 1][t][b]);
    y[t * a.y_stride + index] = silu_times(sum, up);
  } else {
    y[t * a.y_stride + index] = sum;
  }
}

template <DType T, bool kSwiGlu>
Status launch_k8(const Context& ctx, const K8Args& a) {
  constexpr int64_t kItems = kSwiGlu ? kRows / 2 : kRows;
  const dim3 grid(static_cast<unsigned>((a.targets.n_items + kItems - 1) / kItems));
  const int quarters = 4 * a.n_blocks;
  const dim3 block(static_cast<unsigned>(quarters >= kMaxThreads ? kMaxThreads : (quarters + 31) / 32 * 32));
  if constexpr (kSwiGlu) {
    return launch_early_start(ctx, grid, block, matmul_k8_kernel<T, true, 1>, a, "matmul (k-quant int8 kernel)");
  } else {
    return a.n_tokens == 1
               ? launch_early_start(ctx, grid, block, matmul_k8_kernel<T, false, 1>, a, "matmul (k-quant int8 kernel)")
               : launch_early_start(ctx, grid, block, matmul_k8_kernel<T, false, kVecMaxTokens>, a,
                                    "matmul (k-quant int8 kernel)");
  }
}

}  // namespace

bool matmul_vec_k8_takes(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  if (!ctx.k_quants_in_integers || ctx.vec_kernel != VecKernel::kPieces || ctx.workspace == nullptr) return false;
  const TensorView& w0 = targets[0].w;
  int align = 0;
  switch (w0.type) {
    case DType::Q4_K: align = K8Format<DType::Q4_K>::kAlign; break;
    case DType::Q5_K: align = K8Format<DType::Q5_K>::kAlign; break;
    case DType::Q6_K: align = K8Format<DType::Q6_K>::kAlign; break;
    default: return false;
  }
  if (w0.ne[0] % kQ8kValues != 0 || w0.ne[0] / kQ8kValues > kMaxBlocks || x.type != DType::F32) return false;
  for (const MatmulTarget& t : targets) {
    if (!aligned_to(t.w.data, static_cast<size_t>(align)) || t.w.nb[1] % static_cast<size_t>(align) != 0) return false;
  }
  return true;
}

Status matmul_vec_k8(const Context& ctx, const TensorView& x, DType type, const VecTargets& targets, int64_t y_stride,
                     bool swiglu) {
  if (targets.n_items == 0 || x.n_rows() == 0) return {};
  ScratchScope scope(*ctx.workspace);
  K8Args a;
  if (!take_q8k_rows(ctx, x.ne[0], x.n_rows(), &a.x)) {
    return resource_exhausted("matmul: the workspace has no room for the quantized activations");
  }
  PAGODA_TRY(quantize_rows_q8k(ctx, x, a.x));
  a.targets = targets;
  a.n_blocks = static_cast<int>(x.ne[0] / kQ8kValues);
  a.y_stride = y_stride;
  a.n_tokens = static_cast<int>(x.n_rows());
  switch (type) {
    case DType::Q4_K: return swiglu ? launch_k8<DType::Q4_K, true>(ctx, a) : launch_k8<DType::Q4_K, false>(ctx, a);
    case DType::Q5_K: return swiglu ? launch_k8<DType::Q5_K, true>(ctx, a) : launch_k8<DType::Q5_K, false>(ctx, a);
    case DType::Q6_K: return swiglu ? launch_k8<DType::Q6_K, true>(ctx, a) : launch_k8<DType::Q6_K, false>(ctx, a);
    default: return internal_error("matmul_vec_k8: not a k-quant");
  }
}

}  // namespace pagoda::backend::cuda::weights
