#include "backend/cpu/ops/silu.h"

#include <cmath>
#include <limits>

namespace pagoda::backend::cpu {

// x = n ln2 + b with n an integer (ln2 in two parts), exp(b) by a degree-5 polynomial,
// then scaled by 2^n with one rounding (also into subnormals): bit for bit the
// reference's AVX-512 expf.
float reference_expf(float x) {
  const float shift = 0x1.8p23f;  // adding it rounds x / ln2 to an integer
  const float n = std::fma(x, 0x1.715476p+0f, shift) - shift;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                    std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::isnan(n)) return x;
  if (std::fabs(n) > 192.0f) return n > 0.0f ? std::numeric_limits<float>::infinity() : 0.0f;
  return std::ldexp(j, static_cast<int>(n));
}

void silu_mul_row(Isa isa, const float* g, const float* u, float* z, int64_t n) {
  constexpr int64_t kReferenceLanes = 16;  // the reference's vector width for this op
  const int64_t n_vector = n / kReferenceLanes * kReferenceLanes;
  int64_t i = 0;
  if (isa != Isa::kScalar) {
    avx2::silu_mul_reference_exp(g, u, z, n_vector);
    i = n_vector;
  }
  for (; i < n_vector; ++i) z[i] = g[i] / (1.0f + reference_expf(-g[i])) * u[i];
  for (; i < n; ++i) z[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

}  // namespace pagoda::backend::cpu
