#pragma once
// The scale searches of the k-quant reference quantizers. Each picks, for one small
// group of values x[0..n), integer quants L and the scale (and min) that reconstruct x
// best under its own error measure. The arithmetic mirrors the reference exactly, so
// the chosen quants and scales are bit-identical.

#include <cstdint>

namespace pagoda::quant {

// Groups of at most this many values (the k-quants use 16 or 32).
constexpr int kMaxSearchGroup = 32;

// Below this absolute maximum a group counts as all zero.
constexpr float kGroupMaxEps = 1e-15f;

// Symmetric quants with weights x^2: x[i] ~ scale * (L[i] - nmax), L[i] in [0, 2 nmax).
// Tries 19 scales around nmax / max|x| and keeps the one of least weighted squared
// error. Returns the scale (0 for an all-zero group, with every L[i] = 0).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L);

// Symmetric quants for Q3_K: starts from nmax / max|x|, then moves single quants while
// that lowers the x^2-weighted error (at most 5 passes). Same L convention as above;
// an all-zero group returns 0 with every L[i] = 0 (not nmax).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);

// Affine quants with a non-negative min: x[i] ~ scale * L[i] - min, L[i] in [0, nmax].
struct AffineFit {
  float scale;
  float min;  // subtracted, >= 0
};
// Tries nstep + 1 scales (nmax + rmin + rdelta * k over the range) and, for each, the
// weighted least-squares scale and min; keeps the least weighted error, which is
// absolute (use_mad) or squared. n <= kMaxSearchGroup.
AffineFit make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                           float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace pagoda::quant
