// SwiGLU rounds as the reference build's does: the first n / 16 * 16 values of a row take
// its vectorized expf (a polynomial, within 1.5 ulp of exp), the last n % 16 the C
// library's expf. Pinned on inputs where the two give different silu values: the
// expected results are the reference algorithm's, bit for bit.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/silu.h"
#include "core/thread_pool.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

struct Case {
  float x;
  float silu;  // x / (1 + exp(-x)) with the reference's vectorized expf
};

// 16 inputs across [-12, 6] where that silu differs from the one through std::exp.
constexpr Case kCases[16] = {
    {-0x1.8p+3f, -0x1.353f18p-14f},      {-0x1.5p+3f, -0x1.2f2b58p-12f},
    {-0x1.1fe98ep+3f, -0x1.23d586p-10f}, {-0x1.df1f8ap+2f, -0x1.12f1c8p-8f},
    {-0x1.b9c5d6p+2f, -0x1.c63626p-8f},  {-0x1.b205bcp+2f, -0x1.f7a04ap-8f},
    {-0x1.7edc34p+2f, -0x1.ed61d8p-7f},  {-0x1.a80ecp+2f, -0x1.1f6d5p-7f},
    {-0x1.2p+2f, -0x1.9505dp-5f},        {-0x1.7f4c6ep+1f, -0x1.245fd8p-3f},
    {-0x1.8p+0f, -0x1.1834a4p-2f},       {0x1.0d5a5cp-6f, 0x1.0f9126p-7f},
    {0x1.8p+0f, 0x1.39f2d8p+0f},         {0x1.81c0ecp+1f, 0x1.6fb23ap+1f},
    {0x1.3a6446p+2f, 0x1.3818a2p+2f},    {0x1.986002p+2f, 0x1.97af4p+2f},
};

float libm_silu(float x) { return x / (1.0f + std::exp(-x)); }

// Every test runs on the portable code and on the AVX2 kernel where the CPU has it.
class SiluReference : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!quant::isa_available(GetParam())) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
  }
};

TEST_P(SiluReference, VectorPartTakesThePolynomialTheRestTheCLibrary) {
  // One row of 20: the 16 cases, then 4 of them again in the tail.
  constexpr int64_t n = 20;
  std::vector<float> gate(n), up(n, 1.0f), out(n);
  for (int64_t i = 0; i < n; ++i) gate[i] = kCases[i % 16].x;
  ThreadPool pool(2);
  ASSERT_TRUE(silu_mul(pool, GetParam(), make_view(gate.data(), DType::F32, n), make_view(up.data(), DType::F32, n),
                       make_view(out.data(), DType::F32, n))
                  .ok());
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], kCases[i].silu) << "value " << i;
    EXPECT_NE(out[i], libm_silu(kCases[i].x)) << "value " << i << " does not tell the two apart";
  }
  for (int64_t i = 16; i < n; ++i) EXPECT_EQ(out[i], libm_silu(gate[i])) << "value " << i;
}

TEST_P(SiluReference, ProductWithUpAndExtremes) {
  // 16 values: silu(x) * u rounded once more; exp overflow and underflow saturate.
  constexpr int64_t n = 16;
  std::vector<float> gate(n), up(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    gate[i] = kCases[i].x;
    up[i] = 0.75f + 0.125f * static_cast<float>(i);
  }
  gate[0] = -200.0f;  // exp(200) overflows: silu = -0
  gate[1] = 200.0f;   // exp(-200) underflows: silu = x
  ThreadPool pool(1);
  ASSERT_TRUE(silu_mul(pool, GetParam(), make_view(gate.data(), DType::F32, n), make_view(up.data(), DType::F32, n),
                       make_view(out.data(), DType::F32, n))
                  .ok());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(std::signbit(out[0]));
  EXPECT_EQ(out[1], 200.0f * up[1]);
  for (int64_t i = 2; i < n; ++i) EXPECT_EQ(out[i], kCases[i].silu * up[i]) << "value " << i;
}

TEST_P(SiluReference, SameBitsAsThePortableCodeEverywhere) {
  // Wide inputs (overflow, subnormal results, NaN, infinities) against the scalar path.
  constexpr int64_t n = 4096 + 13;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-120.0f, 120.0f), narrow(-8.0f, 8.0f);
  std::vector<float> gate(n), up(n), expected(n), got(n);
  for (int64_t i = 0; i < n; ++i) {
    gate[i] = i % 3 == 0 ? wide(rng) : narrow(rng);
    up[i] = narrow(rng);
  }
  gate[5] = NAN;
  gate[6] = INFINITY;
  gate[7] = -INFINITY;
  gate[8] = -95.0f;  // exp(-95) * ... : a subnormal-range scaling
  silu_mul_row(Isa::kScalar, gate.data(), up.data(), expected.data(), n);
  silu_mul_row(GetParam(), gate.data(), up.data(), got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(std::memcmp(&expected[i], &got[i], sizeof(float)), 0)
        << "value " << i << ": silu(" << gate[i] << ") * " << up[i] << " = " << got[i] << ", portable " << expected[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, SiluReference, ::testing::Values(Isa::kScalar, Isa::kAvx2),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
