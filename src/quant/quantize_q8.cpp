// The 8-bit activation formats the dot products pair with weights: Q8_0 and Q8_1 for
// the 32-value formats, Q8_K for the k- and i-quants. Byte-exact with ggml's reference
// quantizers (quantize_row_q8_{0,1,K}_ref). Scalar: once per activation vector they are a
// vanishing share of a matrix-vector product's time. The activation quantizers also have
// AVX2 forms (quantize_q8_avx2.cpp) for batches, where the weights are read once for
// several tokens.
//
// The dot kernels rely on one property of these outputs: every quant is in [-127, 127]
// (never -128), so the SIMD sign tricks cannot overflow.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace pagoda::quant {
namespace {

// Largest |x| of a block, written as the reference writes it (a NaN is skipped unless
// it comes first, exactly like `amax = amax > v ? amax : v`).
float abs_max(const float* x, int count) {
  float amax = 0.0f;
  for (int j = 0; j < count; ++j) {
    const float v = std::fabs(x[j]);
    amax = amax > v ? amax : v;
  }
  return amax;
}

// roundf (half away from zero): adding the float just below 0.5 (with v's sign) and
// truncating equals roundf for every float of magnitude below 2^23 (checked exhaustively
// over [-129, 129]), and vectorizes where roundf is a library call.
int round_away(float v) { return static_cast<int>(v + std::copysign(0.49999997f, v)); }

// The same for any float, into an int8: the clamp and the NaN test keep a non-finite
// activation from being undefined behaviour. Finite blocks never need them.
int8_t round_away_to_i8(float v) {
  if (!(v == v)) return 0;
  return static_cast<int8_t>(round_away(v < -128.0f ? -128.0f : (v > 127.0f ? 127.0f : v)));
}

bool all_finite(const float* x, int count) {
  uint32_t special = 0;  // any exponent field all ones: an infinity or a NaN
  for (int j = 0; j < count; ++j) {
    uint32_t bits;
    std::memcpy(&bits, &x[j], sizeof(bits));
    special |= (bits & 0x7f800000u) == 0x7f800000u;
  }
  return special == 0;
}

// Round to nearest, ties to even, by adding 1.5 * 2^23: the sum's low mantissa bits are
// then the rounded integer. Exact for |v| <= 2^22 (ours are within 127).
int nearest_int(float v) {
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

// How a 32-value block is scaled and rounded. kReference is ggml's *_ref quantizer
// (id = 1 / d, round half away from zero): weight files are made with it. kRuntime is
// what llama.cpp's CPU build applies to activations on x86 (id = 127 / amax, round half
// to even, as _mm256_round_ps does): matching it keeps log-probabilities equal.
enum class Rounding { kReference, kRuntime };

// One Q8_0 / Q8_1 block: scale d = amax / 127, quants round(x / d); returns d.
float quantize_block_32(const float* x, int8_t* qs, Rounding rounding) {
  const float amax = abs_max(x, kQK);
  const float d = amax / 127.0f;
  if (rounding == Rounding::kRuntime) {
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (all_finite(x, kQK) && std::isfinite(id)) {
      for (int j = 0; j < kQK; ++j) qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
    } else {
      for (int j = 0; j < kQK; ++j) {
        const float v = x[j] * id;
        qs[j] = (v == v) ? static_cast<int8_t>(nearest_int(v < -127.0f ? -127.0f : (v > 127.0f ? 127.0f : v))) : 0;
      }
    }
    return d;
  }
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (all_finite(x, kQK) && std::isfinite(id)) {
    // Every |x * id| is within 127 * (1 + 2^-23): the plain loop, vectorized.
    for (int j = 0; j < kQK; ++j) qs[j] = static_cast<int8_t>(round_away(x[j] * id));
  } else {
    for (int j = 0; j < kQK; ++j) qs[j] = round_away_to_i8(x[j] * id);
  }
  return d;
}

void quantize_q8_0(const float* x, void* y, int64_t n, Rounding rounding) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = quantize_block_32(x + b * kQK, blocks[b].qs, rounding);
    blocks[b].d = f32_to_fp16(d);
  }
}

void quantize_q8_1(const float* x, void* y, int64_t n, Rounding rounding) {
  auto* blocks = static_cast<BlockQ8_1*>(y);
  for (int64_t b = 0; b < n / kQK; ++b) {
    BlockQ8_1& block = blocks[b];
    const float d = quantize_block_32(x + b * kQK, block.qs, rounding);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += block.qs[j];
    block.d = f32_to_fp16(d);
    block.s = f32_to_fp16(static_cast<float>(sum) * d);
  }
}

void quantize_block_q8_K(const float* x, BlockQ8_K& y) {
  // The value of largest magnitude, sign kept: it maps to -127, so d may be negative.
  float max = 0.0f;
  float amax = 0.0f;
  for (int j = 0; j < kQK_K; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    y.d = 0.0f;
    std::memset(y.qs, 0, sizeof(y.qs));
    std::memset(y.bsums, 0, sizeof(y.bsums));
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < kQK_K; ++j) {
    const int v = nearest_int(iscale * x[j]);
    y.qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
  }
  for (int g = 0; g < kQK_K / 16; ++g) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) sum += y.qs[16 * g + j];
    y.bsums[g] = static_cast<int16_t>(sum);
  }
  y.d = 1.0f / iscale;
}

}  // namespace

void quantize_row_q8_0(const float* x, void* y, int64_t n) {
  quantize_q8_0(x, y, n, Rounding::kReference);
}
void quantize_row_q8_1(const float* x, void* y, int64_t n) {
  quantize_q8_1(x, y, n, Rounding::kReference);
}
void quantize_activations_q8_0(const float* x, void* y, int64_t n) {
  quantize_q8_0(x, y, n, Rounding::kRuntime);
}
void quantize_activations_q8_1(const float* x, void* y, int64_t n) {
  quantize_q8_1(x, y, n, Rounding::kRuntime);
}

void quantize_row_q8_K(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(y);
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_block_q8_K(x + b * kQK_K, blocks[b]);
}

}  // namespace pagoda::quant
