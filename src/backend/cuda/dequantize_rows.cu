// Weight rows dequantized to f32 (get_rows, BF16 pieces of the f32 GEMM) or f16 (the
// pieces of the f16 GEMM): one thread per 32-value chunk, adjacent threads on adjacent
// chunks of a row, so a warp reads a contiguous run of blocks and writes a contiguous
// run of values.

#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "backend/cuda/quant_blocks.cuh"
#include "backend/cuda/weight_kernels.h"

namespace pagoda::backend::cuda::weights {
namespace {

constexpr int kDequantizeThreads = 256;

// Two floats as the bits of a half2 (lo in the low 16 bits), each rounded to nearest even.
__device__ __forceinline__ uint32_t pack_halves(float lo, float hi) {
  const uint32_t l = __half_as_ushort(__float2half_rn(lo));
  const uint32_t h = __half_as_ushort(__float2half_rn(hi));
  return l | (h << 16);
}

// Writes values v[0..count) at out (16-byte stores where `wide`: count is 32 and out is
// 16-byte aligned).
__device__ __forceinline__ void store_chunk(float* out, const float (&v)[32], int count, bool wide) {
  if (wide) {
    float4* out4 = reinterpret_cast<float4*>(out);
#pragma unroll
    for (int i = 0; i < 8; ++i) out4[i] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  } else {
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      if (j < count) out[j] = v[j];
    }
  }
}

__device__ __forceinline__ void store_chunk(__half* out, const float (&v)[32], int count, bool wide) {
  if (wide) {
    uint4* out4 = reinterpret_cast<uint4*>(out);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out4[i] = make_uint4(pack_halves(v[8 * i], v[8 * i + 1]), pack_halves(v[8 * i + 2], v[8 * i + 3]),
                           pack_halves(v[8 * i + 4], v[8 * i + 5]), pack_halves(v[8 * i + 6], v[8 * i + 7]));
    }
  } else {
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      if (j < count) out[j] = __float2half_rn(v[j]);
    }
  }
}

// Thread i: chunk i % n_chunks of destination row i / n_chunks. dst_aligned: dst and
// dst_stride * sizeof(Out) are multiples of 16 bytes (chunk starts then are too).
template <DType T, typename Out>
__global__ void __launch_bounds__(kDequantizeThreads)
dequantize_rows_kernel(DequantizeRowsArgs a, bool dst_aligned) {
  const int64_t n_chunks = (a.n_values + kChunkValues - 1) / kChunkValues;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.n_rows * n_chunks) return;
  const int64_t r = i / n_chunks;
  const int64_t c = i % n_chunks;
  const int count = static_cast<int>(min(static_cast<int64_t>(kChunkValues), a.n_values - c * kChunkValues));
  const int64_t src_row = a.ids != nullptr ? static_cast<int64_t>(a.ids[r]) : a.first_row + r;
  float v[32];
  if (src_row < 0 || src_row >= a.n_src_rows) {
    // The backend checks ids on the host; this only keeps a bad one from reading outside.
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = __int_as_float(0x7fc00000);
  } else {
    const uint8_t* row = static_cast<const uint8_t*>(a.src) + src_row * static_cast<int64_t>(a.src_row_stride);
    dequantize_chunk<T>(row, c, count, v);
  }
  Out* out = static_cast<Out*>(a.dst) + r * a.dst_stride + c * kChunkValues;
  store_chunk(out, v, count, dst_aligned && count == kChunkValues);
}

template <typename Out>
Status launch_dequantize_rows(const Context& ctx, const DequantizeRowsArgs& args, const char* what) {
  if (args.n_rows <= 0 || args.n_values <= 0) return {};
  const int64_t n_chunks = (args.n_values + kChunkValues - 1) / kChunkValues;
  const int64_t n_blocks = (args.n_rows * n_chunks + kDequantizeThreads - 1) / kDequantizeThreads;
  if (n_blocks > INT32_MAX) return invalid_argument(std::string(what) + ": too many rows for one launch");
  const bool dst_aligned =
      aligned_to(args.dst, 16) && (args.dst_stride * static_cast<int64_t>(sizeof(Out))) % 16 == 0;
  bool launched = false;
  const bool known = visit_weight_format(args.src_type, [&](auto format) {
    constexpr DType kType = decltype(format)::value;
    // f16 destinations are the GEMM pieces of block formats; F16 weights need none and
    // F32 / BF16 multiply in f32, so those instances are never built.
    if constexpr (std::is_same_v<Out, float> || is_block_format<kType>()) {
      dequantize_rows_kernel<kType, Out>
          <<<static_cast<unsigned>(n_blocks), kDequantizeThreads, 0, ctx.stream>>>(args, dst_aligned);
      launched = true;
    }
  });
  if (!known || !launched) {
    return unsupported(std::string(what) + ": no kernel for " + std::string(dtype_name(args.src_type)));
  }
  return launch_status(what);
}

}  // namespace

Status dequantize_rows_f32(const Context& ctx, const DequantizeRowsArgs& args) {
  return launch_dequantize_rows<float>(ctx, args, "dequantize rows to f32");
}

Status dequantize_rows_f16(const Context& ctx, const DequantizeRowsArgs& args) {
  return launch_dequantize_rows<__half>(ctx, args, "dequantize rows to f16");
}

}  // namespace pagoda::backend::cuda::weights
