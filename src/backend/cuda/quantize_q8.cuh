#pragma once
// The activation quantizers' arithmetic (activations_q8.h says what each format is), as
// device functions that both the quantizing kernels (activations_q8.cu) and the integer
// matmul's one-token path (matmul_vec_int8.cu, which quantizes x where it reads it)
// call, so that the two give the same bits.

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

namespace pagoda::backend::cuda::q8 {

__device__ __forceinline__ uint32_t pack_byte(int q, int j) {
  return (static_cast<uint32_t>(q) & 0xFFu) << (8 * (j % 4));
}

// One Q8_0 / Q8_1 block of 32 values, as the CPU rounds activations: d = amax / 127 (kept
// as f16), q = round-half-even(x * (127 / amax)). Finite blocks have |x id| <= 127
// (1 + 2^-23), so the clamp changes nothing and this is the CPU's plain rounding; other
// blocks take the CPU's clamped one. amax is the CPU's abs_max, NaNs included.
struct Block32 {
  uint32_t q[8];
  float d;    // the f16 scale, as a float
  float s;    // Q8_1's f16 s = sum * d, as a float
  int32_t sum;
};

__device__ __forceinline__ Block32 quantize_block32(const float (&v)[32]) {
  float amax = 0.0f;
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const float ax = fabsf(v[j]);
    amax = amax > ax ? amax : ax;
  }
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
  Block32 b{};
#pragma unroll
  for (int j = 0; j < 32; ++j) {
    const float s = __fmul_rn(v[j], id);
    const int c = s == s ? __float2int_rn(s < -127.0f ? -127.0f : (s > 127.0f ? 127.0f : s)) : 0;
    b.sum += c;
    b.q[j / 4] |= pack_byte(c, j);
  }
  b.d = __half2float(__float2half_rn(d));
  b.s = __half2float(__float2half_rn(__fmul_rn(static_cast<float>(b.sum), d)));
  return b;
}

// The CPU's nearest_int (quant/quantize_rounding.h): v + 1.5 * 2^23, the low mantissa
// bits less 2^22. round-half-even(v) for |v| < 2^22; the CPU's value beyond (an infinite
// iscale on a block of tiny values) too, which a float-to-int conversion would not give.
__device__ __forceinline__ int nearest_int(float v) {
  return (__float_as_int(__fadd_rn(v, 12582912.0f)) & 0x007fffff) - 0x00400000;
}

// A quarter of a Q8_K block: 64 of its 256 values, held by one of four neighbouring
// lanes (lanes 4k .. 4k + 3 hold one block). v[32 r + i] is value base[r] + i of the
// block; base[0] < base[1], each a multiple of 16. The four lanes find the first value
// of largest magnitude together; then each quantizes its own: iscale = -127 / max,
// q = round-half-even(iscale x) capped at 127, d = 1 / iscale (0 where the block is
// zeros), sum[2 r + g] the sum of the 16 quants from base[r] + 16 g. Operation for
// operation as quantize_block_q8_K, so even a block whose iscale overflows gives the
// CPU's bytes.
struct Quarter256 {
  uint32_t q[16];
  float d;
  int32_t sum[4];
};

__device__ __forceinline__ Quarter256 quantize_quarter256(const float (&v)[64], const int (&base)[2]) {
  float amax = 0.0f, max = 0.0f;
  int index = 0;
#pragma unroll
  for (int j = 0; j < 64; ++j) {  // in the order of the values' indices in the block
    const float ax = fabsf(v[j]);
    if (ax > amax) {
      amax = ax;
      max = v[j];
      index = base[j / 32] + j % 32;
    }
  }
#pragma unroll
  for (int offset = 1; offset < 4; offset *= 2) {  // a tie goes to the lower index
    const float other_amax = __shfl_xor_sync(0xffffffffu, amax, offset);
    const float other_max = __shfl_xor_sync(0xffffffffu, max, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other_amax > amax || (other_amax == amax && other_index < index)) {
      amax = other_amax;
      max = other_max;
      index = other_index;
    }
  }
  Quarter256 quarter{};
  if (amax == 0.0f) return quarter;
  const float iscale = __fdiv_rn(-127.0f, max);
#pragma unroll
  for (int j = 0; j < 64; ++j) {
    const int r = nearest_int(__fmul_rn(iscale, v[j]));
    const auto c = static_cast<int8_t>(r < 127 ? r : 127);  // the CPU's int8 store, then its sums of those
    quarter.sum[j / 16] += c;
    quarter.q[j / 4] |= pack_byte(c, j);
  }
  quarter.d = __fdiv_rn(1.0f, iscale);
  return quarter;
}

}  // namespace pagoda::backend::cuda::q8
