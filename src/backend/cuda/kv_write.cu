// The first step of attention: each batch row's new K and V go to their KV slots,
// converted to the cache type. One thread per value; blockIdx.y picks K (0) or V (1).
// Thread e writes value e % row_values of token e / row_values: with a q8_0 cache's rows
// whole blocks of 32 and thread blocks of whole warps, the 32 lanes of a warp hold
// exactly one Q8_0 block, so a Q8_0 block is quantized by one warp.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backend/cuda/f32_rows.cuh"
#include "backend/cuda/kv_types.cuh"

namespace pagoda::backend::cuda {
namespace {

constexpr int kWriteThreads = 256;  // a multiple of 32 (see above)

struct KvWriteArgs {
  const char* src[2];          // k, v: f32 head views [n_tokens][n_kv_heads][head_dim]
  int64_t src_head_bytes[2];   // their nb[1]
  int64_t src_token_bytes[2];  // their nb[2]
  char* dst[2];                // the layer's K and V arrays, one row per slot
  int64_t slot_bytes;          // bytes per slot (the arrays' nb[1])
  const int64_t* slots;        // device [n_tokens]
  int64_t n_values;            // n_tokens * row_values
  int32_t row_values;          // n_kv_heads * head_dim: a slot's values (q8_0: a multiple of 32)
  int32_t head_dim;
};

// Stores value i of a slot's row (slot: its first byte).
template <KvType T>
__device__ void store_kv(char* slot, int i, float x);

template <>
__device__ void store_kv<KvType::kF32>(char* slot, int i, float x) {
  reinterpret_cast<float*>(slot)[i] = x;
}

template <>
__device__ void store_kv<KvType::kF16>(char* slot, int i, float x) {
  reinterpret_cast<__half*>(slot)[i] = __float2half_rn(x);
}

// Called by all 32 lanes of a warp together, lane l holding value i = 32 b + l of the
// row's block b. As the CPU's quantize_activations_q8_0: amax the largest |x|, d = amax /
// 127 (stored as f16), id = 127 / amax (0 for an all-zero block), q = x * id rounded half
// to even, clamped to [-127, 127], NaN to 0. (For a block holding a NaN the CPU's amax
// depends on where the NaN sits; fmaxf skips it. Finite blocks give the same bytes.)
template <>
__device__ void store_kv<KvType::kQ8_0>(char* slot, int i, float x) {
  float amax = fabsf(x);
  for (int offset = 16; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  }
  const float scale = __fdiv_rn(amax, 127.0f);
  const float inverse = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
  const float scaled = __fmul_rn(x, inverse);
  const int q = scaled != scaled ? 0 : __float2int_rn(fminf(fmaxf(scaled, -127.0f), 127.0f));
  char* block = slot + (i / kQ8Values) * kQ8BlockBytes;
  if (i % kQ8Values == 0) *reinterpret_cast<__half*>(block) = __float2half_rn(scale);
  block[2 + i % kQ8Values] = static_cast<char>(static_cast<int8_t>(q));
}

template <KvType T>
__global__ void write_kv_kernel(KvWriteArgs a) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // For q8_0, whole warps leave together (n_values and blockDim are multiples of 32), so
  // the Q8_0 store always has its 32 lanes.
  if (e >= a.n_values) return;
  const int which = blockIdx.y;
  const int i = static_cast<int>(e % a.row_values);
  const int64_t t = e / a.row_values;
  const int h = i / a.head_dim, d = i % a.head_dim;
  const float x = reinterpret_cast<const float*>(a.src[which] + t * a.src_token_bytes[which] +
                                                 h * a.src_head_bytes[which])[d];
  store_kv<T>(a.dst[which] + a.slots[t] * a.slot_bytes, i, x);
}

}  // namespace

Status write_kv_rows(const Context& ctx, const TensorView& k, const TensorView& v,
                     const KvLayer& layer, const int64_t* slot_mapping) {
  KvType type = KvType::kF16;
  const int64_t head_dim = k.ne[0], n_kv_heads = k.ne[1], n_tokens = k.ne[2];
  const int64_t row_values = n_kv_heads * head_dim;
  if (!kv_type_of(layer.k.type, &type) || layer.v.type != layer.k.type || layer.k.nb[1] != layer.v.nb[1] ||
      (type == KvType::kQ8_0 && row_values % kQ8Values != 0) || row_values > INT32_MAX) {
    return invalid_argument("attention: KV write needs an f16, f32 or q8_0 cache (q8_0: rows of whole 32-value blocks)");
  }
  const int64_t n_values = n_tokens * row_values;
  if (n_values == 0) return {};
  const int64_t n_blocks = (n_values + kWriteThreads - 1) / kWriteThreads;
  if (n_blocks > kMaxGridX || slot_mapping == nullptr) {
    return invalid_argument("attention: KV write of too many values, or no slot mapping");
  }
  KvWriteArgs a;
  const TensorView* sources[2] = {&k, &v};
  char* targets[2] = {static_cast<char*>(layer.k.data), static_cast<char*>(layer.v.data)};
  for (int i = 0; i < 2; ++i) {
    a.src[i] = static_cast<const char*>(sources[i]->data);
    a.src_head_bytes[i] = static_cast<int64_t>(sources[i]->nb[1]);
    a.src_token_bytes[i] = static_cast<int64_t>(sources[i]->nb[2]);
    a.dst[i] = targets[i];
  }
  a.slot_bytes = static_cast<int64_t>(layer.k.nb[1]);
  a.slots = slot_mapping;
  a.n_values = n_values;
  a.row_values = static_cast<int32_t>(row_values);
  a.head_dim = static_cast<int32_t>(head_dim);
  const dim3 grid(static_cast<unsigned>(n_blocks), 2);
  switch (type) {
    case KvType::kF32: write_kv_kernel<KvType::kF32><<<grid, kWriteThreads, 0, ctx.stream>>>(a); break;
    case KvType::kF16: write_kv_kernel<KvType::kF16><<<grid, kWriteThreads, 0, ctx.stream>>>(a); break;
    case KvType::kQ8_0: write_kv_kernel<KvType::kQ8_0><<<grid, kWriteThreads, 0, ctx.stream>>>(a); break;
  }
  return launch_status("attention: KV write");
}

}  // namespace pagoda::backend::cuda
