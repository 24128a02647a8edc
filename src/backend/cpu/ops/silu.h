#pragma once
// SwiGLU rows, z = silu(g) * u, with the exp the reference build's vectorized SwiGLU
// uses (a Cody-Waite reduction and a degree-5 polynomial, see silu.cpp) on the leading
// n / 16 * 16 values and the C library's on the rest. The AVX2 kernel performs the same
// IEEE operations lane by lane, so both give the same bits; it is ~10x the scalar speed.

#include <cstdint>

#include "quant/dot.h"

namespace pagoda::backend::cpu {

// exp(x) as the reference's vectorized SwiGLU computes it; at most 1.5 ulp from exp(x).
float reference_expf(float x);

// z[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n (z may alias g or u).
void silu_mul_row(Isa isa, const float* g, const float* u, float* z, int64_t n);

namespace avx2 {
// The first n (a multiple of 8) values of silu_mul_row, with reference_expf on every lane.
void silu_mul_reference_exp(const float* g, const float* u, float* z, int64_t n);
}  // namespace avx2

}  // namespace pagoda::backend::cpu
