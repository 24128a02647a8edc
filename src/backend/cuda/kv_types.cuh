#pragma once
// Internal to the CUDA attention: the KV cache's element types as kernels read and write
// them, and the KV write step that attention() enqueues first.
//
// A slot (one token of one layer's K or V) is one row of n_kv_heads * head_dim values,
// head after head: F32 (4 bytes a value), F16 (2), or Q8_0 (blocks of 32 values of 34
// bytes: an f16 scale d, then 32 int8 quants; value = q * d). Values are addressed by
// their index in the row, so a Q8_0 block may hold the values of several small heads
// (head_dim 8 or 16); the row must then be whole blocks.

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "backend/cuda/ops.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

enum class KvType { kF32, kF16, kQ8_0 };

inline constexpr int kQ8Values = 32;      // values per Q8_0 block
inline constexpr int kQ8BlockBytes = 34;  // f16 d + 32 int8

// Value i of a slot's row (slot: the slot's first byte).
template <KvType T>
__device__ inline float load_kv(const char* slot, int i);

template <>
__device__ inline float load_kv<KvType::kF32>(const char* slot, int i) {
  return reinterpret_cast<const float*>(slot)[i];
}

template <>
__device__ inline float load_kv<KvType::kF16>(const char* slot, int i) {
  return __half2float(reinterpret_cast<const __half*>(slot)[i]);
}

// q * d as the CPU's dequantization computes it (float(q) * d, one rounding).
template <>
__device__ inline float load_kv<KvType::kQ8_0>(const char* slot, int i) {
  const char* block = slot + (i / kQ8Values) * kQ8BlockBytes;
  const float scale = __half2float(*reinterpret_cast<const __half*>(block));
  const int8_t q = static_cast<int8_t>(block[2 + i % kQ8Values]);
  return __fmul_rn(static_cast<float>(q), scale);
}

// The cache type of a view, if it is one of the three.
inline bool kv_type_of(DType type, KvType* out) {
  switch (type) {
    case DType::F32: *out = KvType::kF32; return true;
    case DType::F16: *out = KvType::kF16; return true;
    case DType::Q8_0: *out = KvType::kQ8_0; return true;
    default: return false;
  }
}

// Writes row t of k and v (f32 head views [n_tokens][n_kv_heads][head_dim]; for a q8_0
// cache n_kv_heads * head_dim a multiple of 32) to slot slot_mapping[t] of layer.k and layer.v, converted to the cache
// type exactly as the CPU backend converts them (f16: round to nearest even; q8_0: the CPU
// dot kernels' activation quantizer, d = amax / 127 stored as f16, q = round-half-even(x *
// 127 / amax)). slot_mapping: device [n_tokens], every slot inside the layer (checked by
// the backend). The views have been checked by attention().
Status write_kv_rows(const Context& ctx, const TensorView& k, const TensorView& v,
                     const KvLayer& layer, const int64_t* slot_mapping);

}  // namespace pagoda::backend::cuda
