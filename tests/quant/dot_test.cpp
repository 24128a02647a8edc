// Dot-product kernels: every weight type on every instruction set against an
// independent double-precision reference from dequantized values, every SIMD kernel
// against the scalar one, real rows quantized by the reference engine, hand-built blocks
// with exact answers, and the dispatch rules.
//
// Tolerances, relative to the error scale sum_i |w[i] * a[i]|:
//  - SIMD vs scalar, 1e-5: both compute the same exact integer per block (or the same
//    float products); only the order of the float additions differs, one rounding
//    (2^-24 relative) per block or per 8-lane partial sum. 4096 values are at most 128
//    blocks: worst case ~128 * 6e-8 = 7.6e-6; typical errors are ~1e-7.
//  - kernel vs dequantized reference, 1e-5: the same block-sum rounding, plus the
//    dequantizer's rounding of each weight to f32 (2^-24 relative, ~1e-7 of the scale).
// A wrong nibble, bit or scale anywhere moves the result by ~1e-3 of the scale or more.

#include "quant/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/dot_rows.h"
#include "quant/vectors.h"

namespace pagoda::quant {
namespace {

using testing::Reference;
using testing::reference_dot;

constexpr double kSimdTolerance = 1e-5;
constexpr double kReferenceTolerance = 1e-5;

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,
                              DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL, DType::Q2_K,
                              DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K,   DType::IQ4_XS};
const Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAmx};
const Isa kSimdIsas[] = {Isa::kAvx2, Isa::kAvx512, Isa::kAvx512Vnni, Isa::kAmx};

// Why a test of `isa` is skipped; mentions a PAGODA_MAX_ISA cap when one is in force.
std::string cpu_lacks(Isa isa) {
  std::string message;
  switch (isa) {
    case Isa::kAvx2: message = "CPU lacks AVX2 (with FMA and F16C)"; break;
    case Isa::kAvx512: message = "CPU lacks AVX-512 (F, BW, VL, DQ)"; break;
    case Isa::kAvx512Vnni: message = "CPU lacks AVX-512VNNI"; break;
    case Isa::kAmx: message = "CPU lacks AMX (tile, int8)"; break;
    default: break;
  }
  const std::string& notes = cpu_features().notes;
  return notes.empty() ? message : message + " [" + notes + "]";
}

// Row lengths: one block, a few (odd counts exercise the unrolled loops' tails), and a
// typical hidden size. Float types also get lengths that leave a scalar tail.
std::vector<int64_t> test_lengths(DType type) {
  if (testing::is_float_type(type)) return {1, 7, 8, 33, 64, 100, 4096, 4096 + 31};
  const int64_t block = traits(type).block_size;
  return {block, 2 * block, 3 * block, 7 * block, 4096};
}

std::vector<uint8_t> activations_for(const DotKernel& kernel, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes(kernel.activation, n)));
  kernel.quantize(x.data(), bytes.data(), n);
  return bytes;
}

std::string case_name(DType type, Isa isa) {
  return std::string(dtype_name(type)) + "_" + std::string(isa_name(isa));
}

// ---- Every kernel, random rows -----------------------------------------------------

class DotKernelTest : public ::testing::TestWithParam<std::tuple<DType, Isa>> {
 protected:
  void SetUp() override {
    const auto [type, isa] = GetParam();
    if (!isa_available(isa)) GTEST_SKIP() << cpu_lacks(isa);
    kernel_ = find_dot_kernel(type, isa);
    scalar_ = find_dot_kernel(type, Isa::kScalar);
    ASSERT_NE(kernel_, nullptr);
    ASSERT_NE(scalar_, nullptr);
  }
  const DotKernel* kernel_ = nullptr;
  const DotKernel* scalar_ = nullptr;
};

TEST_P(DotKernelTest, AgreesWithDequantizedReference) {
  const DType type = std::get<0>(GetParam());
  std::mt19937 rng(1234u + static_cast<unsigned>(type));
  for (int64_t n : test_lengths(type)) {
    for (int trial = 0; trial < 3; ++trial) {
      const std::vector<uint8_t> w = testing::random_weight_row(type, n, rng);
      const std::vector<uint8_t> a = activations_for(*kernel_, testing::random_activations(n, rng));
      const Reference ref = reference_dot(type, w.data(), a, n);
      const float got = kernel_->dot(n, w.data(), a.data());
      EXPECT_NEAR(got, ref.dot, kReferenceTolerance * ref.magnitude)
          << case_name(type, kernel_->isa) << " n=" << n << " trial " << trial;
    }
  }
}

TEST_P(DotKernelTest, AgreesWithScalarKernel) {
  const DType type = std::get<0>(GetParam());
  std::mt19937 rng(99u + static_cast<unsigned>(type));
  for (int64_t n : test_lengths(type)) {
    for (int trial = 0; trial < 3; ++trial) {
      const std::vector<uint8_t> w = testing::random_weight_row(type, n, rng);
      const std::vector<uint8_t> a = activations_for(*kernel_, testing::random_activations(n, rng));
      const double scale = reference_dot(type, w.data(), a, n).magnitude;
      const float simd = kernel_->dot(n, w.data(), a.data());
      const float scalar = scalar_->dot(n, w.data(), a.data());
      EXPECT_NEAR(simd, scalar, kSimdTolerance * scale)
          << case_name(type, kernel_->isa) << " n=" << n << " trial " << trial;
    }
  }
}

TEST_P(DotKernelTest, ZeroActivationsGiveZero) {
  const DType type = std::get<0>(GetParam());
  std::mt19937 rng(7u);
  const int64_t n = 4 * traits(type).block_size * (testing::is_float_type(type) ? 32 : 1);
  const std::vector<uint8_t> w = testing::random_weight_row(type, n, rng);
  const std::vector<uint8_t> a = activations_for(*kernel_, std::vector<float>(static_cast<size_t>(n), 0.0f));
  EXPECT_EQ(kernel_->dot(n, w.data(), a.data()), 0.0f);
  EXPECT_EQ(kernel_->dot(0, w.data(), a.data()), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Dot, DotKernelTest,
                         ::testing::Combine(::testing::ValuesIn(kWeightTypes), ::testing::ValuesIn(kAllIsas)),
                         [](const auto& info) {
                           return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

// ---- Rows quantized by the reference engine ----------------------------------------

class DotReferenceRowsTest : public ::testing::TestWithParam<std::tuple<std::string, Isa>> {};

// Each weight row of quant-vectors.gguf against the activations of the next row's
// source values; the reference uses the reference engine's own dequantization (.deq).
TEST_P(DotReferenceRowsTest, AgreesWithReferenceDequantization) {
  const auto& [type_name, isa] = GetParam();
  if (!isa_available(isa)) GTEST_SKIP() << cpu_lacks(isa);
  const auto v = testing::load_type_vectors(type_name);
  ASSERT_TRUE(v.ok()) << v.status().message();
  const DotKernel* kernel = find_dot_kernel(v->type, isa);
  ASSERT_NE(kernel, nullptr);
  const int64_t n = v->row_length;
  for (int64_t r = 0; r < v->rows; ++r) {
    const std::vector<float> x(v->src.begin() + ((r + 1) % v->rows) * n,
                               v->src.begin() + ((r + 1) % v->rows + 1) * n);
    const std::vector<uint8_t> a = activations_for(*kernel, x);
    const std::vector<double> act = testing::activation_values(kernel->activation, a, n);
    double dot = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      dot += v->deq[r * n + i] * act[i];
      magnitude += std::fabs(v->deq[r * n + i] * act[i]);
    }
    const uint8_t* w = v->q.data() + r * row_bytes(v->type, n);
    if (v->type == DType::Q4_1 || v->type == DType::Q5_1) {  // see reference_dot
      dot = reference_dot(v->type, w, a, n).dot;
    }
    EXPECT_NEAR(kernel->dot(n, w, a.data()), dot, kReferenceTolerance * magnitude)
        << type_name << " " << isa_name(isa) << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Dot, DotReferenceRowsTest,
                         ::testing::Combine(::testing::ValuesIn(testing::reference_type_names()),
                                            ::testing::ValuesIn(kAllIsas)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::string(isa_name(std::get<1>(info.param)));
                         });

// ---- Hand-built blocks with exact answers ------------------------------------------

// Runs `check` with the kernel of `type` on every ISA this CPU has.
template <typename Check>
void for_each_isa(DType type, Check check) {
  for (Isa isa : available_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    const DotKernel* kernel = find_dot_kernel(type, isa);
    ASSERT_NE(kernel, nullptr);
    check(*kernel);
  }
}

BlockQ8_0 q8_0_block(float d, int first, int step) {
  BlockQ8_0 b{};
  b.d = f32_to_fp16(d);
  for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(first + step * j);
  return b;
}

TEST(DotExact, Q4_0LowNibblesPairWithFirstHalf) {
  // Low nibbles 8 (value 0), high nibbles 9 (value 1): only values 16..31 count.
  BlockQ4_0 w{};
  w.d = f32_to_fp16(0.5f);
  for (uint8_t& q : w.qs) q = 0x98;
  const BlockQ8_0 a = q8_0_block(2.0f, -16, 1);  // a[j] = 2 * (j - 16)
  // sum_{j=16..31} 0.5 * 1 * 2 * (j - 16) = 120
  for_each_isa(DType::Q4_0, [&](const DotKernel& k) { EXPECT_EQ(k.dot(kQK, &w, &a), 120.0f); });
}

TEST(DotExact, Q8_0WithMinus128Weights) {
  // -128 is a legal weight byte (the sign trick must treat its magnitude as 128).
  BlockQ8_0 w = q8_0_block(1.0f, 0, 0);
  for (int j = 0; j < kQK; ++j) w.qs[j] = static_cast<int8_t>(j % 2 ? -128 : 127);
  const BlockQ8_0 a = q8_0_block(1.0f, -127, 8);  // -127, -119, ..., 121
  int expected = 0;
  for (int j = 0; j < kQK; ++j) expected += w.qs[j] * a.qs[j];
  for_each_isa(DType::Q8_0, [&](const DotKernel& k) {
    EXPECT_EQ(k.dot(kQK, &w, &a), static_cast<float>(expected));
  });
}

TEST(DotExact, IQ4_NLUsesTheCodebook) {
  BlockIQ4_NL w{};
  w.d = f32_to_fp16(1.0f);
  for (int j = 0; j < kQK / 2; ++j) w.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const BlockQ8_0 a = q8_0_block(1.0f, 1, 0);  // all ones: the dot is the sum of the weights
  int expected = 0;
  for (int j = 0; j < 16; ++j) expected += kIQ4NLValues[j] + kIQ4NLValues[15 - j];
  for_each_isa(DType::IQ4_NL, [&](const DotKernel& k) {
    EXPECT_EQ(k.dot(kQK, &w, &a), static_cast<float>(expected));
  });
}

BlockQ8_K q8_K_ones(float d) {
  BlockQ8_K a{};
  a.d = d;
  for (int8_t& q : a.qs) q = 1;
  for (int16_t& s : a.bsums) s = 16;
  return a;
}

TEST(DotExact, Q4_KSubBlockScalesAndMins) {
  // Sub-block s: scale s + 1, min 2 (the 6-bit packing: j < 4 in bytes j / j + 4, j >= 4
  // split over byte j + 4 and the top bits of bytes j - 4 / j). All nibbles 3.
  BlockQ4_K w{};
  w.d = f32_to_fp16(1.0f);
  w.dmin = f32_to_fp16(0.5f);
  for (int j = 0; j < 4; ++j) {
    w.scales[j] = static_cast<uint8_t>(j + 1);
    w.scales[j + 4] = 2;
  }
  for (int j = 4; j < 8; ++j) w.scales[j + 4] = static_cast<uint8_t>((j + 1) | (2 << 4));
  for (uint8_t& q : w.qs) q = 0x33;
  const BlockQ8_K a = q8_K_ones(1.0f);
  // sum_s 32 * ((s + 1) * 3 - 0.5 * 2) = 32 * (3 * 36 - 8) = 3200
  for_each_isa(DType::Q4_K, [&](const DotKernel& k) { EXPECT_EQ(k.dot(kQK_K, &w, &a), 3200.0f); });
}

TEST(DotExact, Q6_KSignedScalesAndOffset) {
  // All 6-bit values 33 (stored value - 32 = 1); group g has scale (g % 2 ? -g : g).
  BlockQ6_K w{};
  w.d = f32_to_fp16(0.25f);
  for (uint8_t& q : w.ql) q = 0x11;
  for (uint8_t& q : w.qh) q = 0xAA;  // top bits 2 in every pair: 0b10 << 4 = 32
  int scale_sum = 0;
  for (int g = 0; g < 16; ++g) {
    w.scales[g] = static_cast<int8_t>(g % 2 ? -g : g);
    scale_sum += w.scales[g];
  }
  const BlockQ8_K a = q8_K_ones(2.0f);
  const float expected = 0.25f * 2.0f * 16.0f * static_cast<float>(scale_sum);
  for_each_isa(DType::Q6_K, [&](const DotKernel& k) { EXPECT_EQ(k.dot(kQK_K, &w, &a), expected); });
}

TEST(DotExact, F32TailBeyondTheVectorWidth) {
  std::vector<float> w(37), a(37);
  double expected = 0.0;
  for (int i = 0; i < 37; ++i) {
    w[i] = static_cast<float>(i);
    a[i] = i % 3 == 0 ? 1.0f : -0.5f;
    expected += w[i] * a[i];
  }
  for_each_isa(DType::F32, [&](const DotKernel& k) {
    EXPECT_EQ(k.dot(37, w.data(), a.data()), static_cast<float>(expected));
  });
}

// ---- Tables ------------------------------------------------------------------------

TEST(DotTables, HalfTableIsTheExactConversion) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float expected = fp16_to_f32(static_cast<uint16_t>(h));
    EXPECT_EQ(std::memcmp(&kHalfToFloat.values[h], &expected, sizeof(float)), 0) << "half 0x" << std::hex << h;
  }
}

// ---- Dispatch ------------------------------------------------------------------------

TEST(DotDispatch, ActivationFormatsPairWithWeights) {
  const std::pair<DType, DType> pairs[] = {
      {DType::F32, DType::F32},   {DType::F16, DType::F16},     {DType::BF16, DType::BF16},
      {DType::Q4_0, DType::Q8_0}, {DType::Q4_1, DType::Q8_1},   {DType::Q5_0, DType::Q8_0},
      {DType::Q5_1, DType::Q8_1}, {DType::Q8_0, DType::Q8_0},   {DType::IQ4_NL, DType::Q8_0},
      {DType::Q2_K, DType::Q8_K}, {DType::Q3_K, DType::Q8_K},   {DType::Q4_K, DType::Q8_K},
      {DType::Q5_K, DType::Q8_K}, {DType::Q6_K, DType::Q8_K},   {DType::IQ4_XS, DType::Q8_K}};
  for (const auto& [weight, activation] : pairs) {
    const DotKernel* k = dot_kernel(weight);
    ASSERT_NE(k, nullptr) << dtype_name(weight);
    EXPECT_EQ(k->weight, weight);
    EXPECT_EQ(k->activation, activation) << dtype_name(weight);
    EXPECT_NE(k->quantize, nullptr);
    EXPECT_NE(k->dot, nullptr);
  }
}

TEST(DotDispatch, TypesWithoutKernelGiveNull) {
  EXPECT_EQ(dot_kernel(DType::IQ2_XXS), nullptr);
  EXPECT_EQ(dot_kernel(DType::Q8_K), nullptr);  // an activation format, never a weight
  EXPECT_EQ(dot_kernel(DType::I32), nullptr);
}

TEST(DotDispatch, IsasFollowTheCpu) {
  const std::vector<Isa>& isas = available_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kScalar);
  EXPECT_EQ(best_isa(), isas.back());
  const CpuFeatures& cpu = cpu_features();
  EXPECT_EQ(isa_available(Isa::kAvx2), cpu.has_avx2_group());
  EXPECT_EQ(isa_available(Isa::kAvx512), cpu.has_avx512_group());
  EXPECT_EQ(isa_available(Isa::kAvx512Vnni), cpu.has_avx512_group() && cpu.avx512_vnni);
  EXPECT_EQ(isa_available(Isa::kAmx), cpu.has_avx512_group() && cpu.avx512_vnni && cpu.amx_tile && cpu.amx_int8);
}

TEST(DotDispatch, UnavailableIsaGivesNullAndLowerIsaStandsIn) {
  for (Isa isa : kAllIsas) {
    for (DType type : kWeightTypes) {
      const DotKernel* k = find_dot_kernel(type, isa);
      if (!isa_available(isa)) {
        EXPECT_EQ(k, nullptr) << case_name(type, isa);
        continue;
      }
      ASSERT_NE(k, nullptr) << case_name(type, isa);
      EXPECT_LE(static_cast<int>(k->isa), static_cast<int>(isa)) << case_name(type, isa);
    }
  }
  // Types without an AVX-512 kernel of their own run the AVX2 one there.
  if (isa_available(Isa::kAvx512)) {
    EXPECT_EQ(find_dot_kernel(DType::Q2_K, Isa::kAvx512)->isa, Isa::kAvx2);
    EXPECT_EQ(find_dot_kernel(DType::Q4_K, Isa::kAvx512)->isa, Isa::kAvx512);
  }
  if (isa_available(Isa::kAvx512Vnni)) {  // k-quants have no VNNI kernel: AVX-512 stands in
    EXPECT_EQ(find_dot_kernel(DType::Q4_K, Isa::kAvx512Vnni)->isa, Isa::kAvx512);
    EXPECT_EQ(find_dot_kernel(DType::Q4_0, Isa::kAvx512Vnni)->isa, Isa::kAvx512Vnni);
  }
  if (isa_available(Isa::kAmx)) {  // the tiles serve batches only: the VNNI dot kernels stand in
    EXPECT_EQ(find_dot_kernel(DType::Q4_0, Isa::kAmx)->isa, Isa::kAvx512Vnni);
  }
  if (isa_available(Isa::kAvx2)) {
    EXPECT_EQ(find_dot_kernel(DType::Q4_0, Isa::kAvx2)->isa, Isa::kAvx2);
  }
}

}  // namespace
}  // namespace pagoda::quant
