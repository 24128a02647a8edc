#pragma once
// The exp of softmax weights, shared by attention (backend/cpu) and the sampler
// (core/exp_sum.h): one definition of the f32 operations, so that the vector forms
// (softmax_exp_avx2.h) give the scalar form's bits.

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace pagoda {

// exp(x) for x <= 0 (the scores minus their max), to about 1 ulp, in a fixed sequence of
// f32 operations the vector kernels repeat lane by lane: x = n ln2 + r with n rounded to
// nearest (by adding 1.5 * 2^23), e^r by a degree-7 polynomial (Horner, FMA), times 2^n
// built in the exponent bits. Below kMin the result is 0 (e^-87 < 2^-125, far
// below what a sum that includes the max's weight of 1 can resolve); NaN stays NaN.
// Internal linkage: each file compiles its own copy with its own instruction set.
namespace softmax_exp_constants {
inline constexpr float kMin = -87.0f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
inline constexpr float kLn2Hi =
    0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi short enough that n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;
// e^r ~ 1 + r (1 + r (c2 + r (c3 + r (c4 + r (c5 + r (c6 + r c7)))))) on |r| <= ln2 / 2.
inline constexpr float kC7 = 1.9875691500e-4f, kC6 = 1.3981999507e-3f, kC5 = 8.3334519073e-3f,
                       kC4 = 4.1665795894e-2f, kC3 = 1.6666665459e-1f, kC2 = 5.0000001201e-1f;
}  // namespace softmax_exp_constants

[[maybe_unused]] static inline float softmax_exp(float x) {
  namespace k = softmax_exp_constants;
  const float clamped = k::kMin > x ? k::kMin : x;  // as the vector max(kMin, x): NaN passes
  const float t = std::fma(clamped, k::kLog2e, k::kRound);
  const float n = t - k::kRound;
  float r = std::fma(n, -k::kLn2Hi, clamped);
  r = std::fma(n, -k::kLn2Lo, r);
  float p = k::kC7;
  for (const float c : {k::kC6, k::kC5, k::kC4, k::kC3, k::kC2, 1.0f, 1.0f}) p = std::fma(p, r, c);
  const uint32_t exponent = (std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(k::kRound) + 127u)
                            << 23;
  const float y = p * std::bit_cast<float>(exponent);
  return x < k::kMin ? 0.0f : y;
}

}  // namespace pagoda
