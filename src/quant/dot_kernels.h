#pragma once
// The dot-product kernels of every instruction set, one namespace per ISA, for
// quant/dot.cpp to put in its dispatch table. Internal to quant/: callers go through
// find_dot_kernel(), which checks that the CPU runs the code first.
//
// Every kernel: float dot_X(int64_t n, const void* w, const void* a) returns
// sum_i w[i] * a[i] over n values, n a multiple of the weight's block size; `w` is a
// row of weight type X, `a` the activations in X's paired format (see dot.cpp). The
// 8-bit activations hold quants in [-127, 127], as quantize_row_q8_* make them.
//
// Code built for an ISA (the *_avx2.cpp, *_avx512*.cpp files) must not define any
// function with external or inline linkage that a scalar file could also emit: the
// linker keeps one copy of an inline function, maybe the AVX-512 one. So those files use
// intrinsics and their own `static` helpers only (no core/fp16.h, no std algorithms).

#include <cstdint>

namespace pagoda::quant {

// Every IEEE half as a float (256 KiB, built at compile time; dot_tables.cpp). A lookup
// costs fewer instructions than converting a lone half with F16C, and the few thousand
// distinct scales of a model stay in cache. A plain array: indexing it calls nothing.
struct alignas(64) HalfToFloatTable {
  float values[65536];
};
extern const HalfToFloatTable kHalfToFloat;

namespace scalar {
// quantize_activations_q8_0 / _q8_1, then the scales and sums read back from the written
// blocks: the QuantizeDescribedFn of every ISA without a faster one (quantize_described.cpp).
void quantize_described_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums);
void quantize_described_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums);

// Activation rows for the float weights (a copy, or a rounding conversion).
void convert_row_f32(const float* x, void* y, int64_t n);
void convert_row_f16(const float* x, void* y, int64_t n);
void convert_row_bf16(const float* x, void* y, int64_t n);

float dot_f32(int64_t n, const void* w, const void* a);
float dot_f16(int64_t n, const void* w, const void* a);
float dot_bf16(int64_t n, const void* w, const void* a);
float dot_q4_0(int64_t n, const void* w, const void* a);
float dot_q4_1(int64_t n, const void* w, const void* a);
float dot_q5_0(int64_t n, const void* w, const void* a);
float dot_q5_1(int64_t n, const void* w, const void* a);
float dot_q8_0(int64_t n, const void* w, const void* a);
float dot_iq4_nl(int64_t n, const void* w, const void* a);
float dot_q2_K(int64_t n, const void* w, const void* a);
float dot_q3_K(int64_t n, const void* w, const void* a);
float dot_q4_K(int64_t n, const void* w, const void* a);
float dot_q5_K(int64_t n, const void* w, const void* a);
float dot_q6_K(int64_t n, const void* w, const void* a);
float dot_iq4_xs(int64_t n, const void* w, const void* a);
}  // namespace scalar

namespace avx2 {  // AVX2 + FMA + F16C
// quantize_activations_q8_0 / _q8_1 of quant/quantize.h, the same bytes (quantize_q8_avx2.cpp).
void quantize_activations_q8_0(const float* x, void* y, int64_t n);
void quantize_activations_q8_1(const float* x, void* y, int64_t n);
// quantize_row_q8_K of quant/quantize.h, the same bytes (quantize_q8_avx2.cpp).
void quantize_row_q8_K(const float* x, void* y, int64_t n);
// The same followed by the scalar read-back, as scalar::quantize_described_q8_* (built
// as scalar code in quantize_described.cpp: only the quantizer it calls is AVX2).
void quantize_described_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums);
void quantize_described_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums);

float dot_f32(int64_t n, const void* w, const void* a);
float dot_f16(int64_t n, const void* w, const void* a);
float dot_bf16(int64_t n, const void* w, const void* a);
float dot_q4_0(int64_t n, const void* w, const void* a);
float dot_q4_1(int64_t n, const void* w, const void* a);
float dot_q5_0(int64_t n, const void* w, const void* a);
float dot_q5_1(int64_t n, const void* w, const void* a);
float dot_q8_0(int64_t n, const void* w, const void* a);
float dot_iq4_nl(int64_t n, const void* w, const void* a);
float dot_q2_K(int64_t n, const void* w, const void* a);
float dot_q3_K(int64_t n, const void* w, const void* a);
float dot_q4_K(int64_t n, const void* w, const void* a);
float dot_q5_K(int64_t n, const void* w, const void* a);
float dot_q6_K(int64_t n, const void* w, const void* a);
float dot_iq4_xs(int64_t n, const void* w, const void* a);
}  // namespace avx2

namespace avx512 {  // AVX-512 F/BW/VL/DQ
// The QuantizeDescribedFn of quant/dot.h for Q8_0 / Q8_1: the bytes of
// quantize_activations_q8_*, eight blocks at a time (quantize_q8_avx512.cpp).
void quantize_described_q8_0(const float* x, void* y, int64_t n, float* scales, int32_t* sums);
void quantize_described_q8_1(const float* x, void* y, int64_t n, float* scales, int32_t* sums);

float dot_q4_0(int64_t n, const void* w, const void* a);
float dot_q8_0(int64_t n, const void* w, const void* a);
float dot_iq4_nl(int64_t n, const void* w, const void* a);
float dot_q4_K(int64_t n, const void* w, const void* a);
float dot_q5_K(int64_t n, const void* w, const void* a);
float dot_q6_K(int64_t n, const void* w, const void* a);
float dot_iq4_xs(int64_t n, const void* w, const void* a);
}  // namespace avx512

namespace avx512vnni {  // AVX-512 + VNNI (vpdpbusd)
float dot_q4_0(int64_t n, const void* w, const void* a);
float dot_q8_0(int64_t n, const void* w, const void* a);
float dot_iq4_nl(int64_t n, const void* w, const void* a);
}  // namespace avx512vnni

}  // namespace pagoda::quant
