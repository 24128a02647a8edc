#pragma once
// f32 to block formats, byte-exact with the reference quantizers (ggml's *_ref
// functions: no importance matrix).

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace pagoda::quant {

bool can_quantize(DType type);

// Quantizes n values (a multiple of the type's block size) from src into dst, which
// holds row_bytes(type, n) bytes.
Status quantize_row(DType type, const float* src, void* dst, int64_t n);

// Activation formats used by the dot products (n a multiple of 32, or of 256 for Q8_K).
// Reference semantics: round half away from zero for Q8_0/Q8_1, nearest-even for Q8_K.
void quantize_row_q8_0(const float* x, void* y, int64_t n);
void quantize_row_q8_1(const float* x, void* y, int64_t n);
void quantize_row_q8_K(const float* x, void* y, int64_t n);

// The Q8_0 / Q8_1 activation quantizers the dot products use: the same format, scaled by
// id = 127 / amax and rounded half to even, as llama.cpp's CPU build quantizes
// activations on x86. Same bytes as the reference except where a value lies within an
// ulp of a rounding tie; matching it keeps log-probabilities equal to that build's.
void quantize_activations_q8_0(const float* x, void* y, int64_t n);
void quantize_activations_q8_1(const float* x, void* y, int64_t n);

}  // namespace pagoda::quant
