#pragma once
// Rotating one head by RoPE: the pair (x0, x1) becomes (fma(x0, cos, -(x1 sin)),
// fma(x0, sin, x1 cos)), one product of each output fused as the reference build's
// compiled loop does. The AVX2 kernel performs the same IEEE operations lane by lane,
// so both give the same bits.

#include <cstdint>

#include "quant/dot.h"

namespace pagoda::backend::cpu {

// Rotates the first n_dims values of one head v. cos_sin[2i], cos_sin[2i + 1]: the cos
// and sin of pair i. Pairs are (2i, 2i + 1), or (i, i + n_dims / 2) with neox.
void rotate_head(Isa isa, float* v, const float* cos_sin, int32_t n_dims, bool neox);

namespace avx2 {
// The pairs [0, n_pairs) of rotate_head (n_pairs a multiple of 8 with neox, of 4 without).
void rotate_pairs(float* v, const float* cos_sin, int32_t n_pairs, int32_t n_dims, bool neox);
}  // namespace avx2

}  // namespace pagoda::backend::cpu
