// The float weights' matmuls in reference numerics (backend/cpu/matmul/matmul_float.h), against
// scalar models of the reference build's arithmetic, bit for bit:
//  - batches (2 tokens or more, rows a multiple of 16 values, a multiple of 4 rows): its
//    gemm, one 16-lane accumulator per output, lane l fusing values l, l + 16, ... in
//    order, the lanes then added (i, i + 8), (i, i + 4), (0 + 2) + (1 + 3);
//  - a single token, and the shapes the gemm declines: its vector dot products (the quant
//    layer's dot_f32 / dot_f16, pinned in tests/quant/dot_float_order_test.cpp).
// F16 weights multiply activations rounded to f16 first, in both. Fast numerics take the
// gemm for every batch; its AVX-512 form gives the same bits.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/matmul/matmul_float.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "quant/dot.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

// One output of the reference's gemm over n values (n a multiple of 16).
float gemm_model(const float* w, const float* a, int64_t n) {
  float lane[16] = {};
  for (int64_t i = 0; i < n; i += 16) {
    for (int l = 0; l < 16; ++l) lane[l] = std::fma(w[i + l], a[i + l], lane[l]);
  }
  float half[8], quarter[4];
  for (int l = 0; l < 8; ++l) half[l] = lane[l] + lane[l + 8];
  for (int l = 0; l < 4; ++l) quarter[l] = half[l] + half[l + 4];
  return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

// Float weights [n_out][n_in] in the type under test, and their values as floats.
struct Weights {
  std::vector<float> values;     // [n_out][n_in]
  std::vector<std::byte> bytes;  // the same rows as F32 or F16
  TensorView view;
};

Weights make_weights(DType type, std::vector<float> values, int64_t n_in, int64_t n_out) {
  Weights w{std::move(values), std::vector<std::byte>(static_cast<size_t>(row_bytes(type, n_in) * n_out)), {}};
  for (size_t i = 0; i < w.values.size(); ++i) {
    if (type == DType::F16) {
      const uint16_t h = f32_to_fp16(w.values[i]);
      w.values[i] = fp16_to_f32(h);
      std::memcpy(w.bytes.data() + 2 * i, &h, sizeof(h));
    } else {
      std::memcpy(w.bytes.data() + 4 * i, &w.values[i], sizeof(float));
    }
  }
  w.view = make_view(w.bytes.data(), type, n_in, n_out);
  return w;
}

// y = x W^T in reference numerics.
Matrix multiply(const Weights& w, Matrix& x, int64_t n_out) {
  ThreadPool pool(3);
  Matmul matmul(quant::best_isa(), CpuNumerics::kReference);
  Matrix y(x.rows, n_out, /*pad=*/3);
  EXPECT_TRUE(matmul.run(pool, w.view, x.view(), y.view()).ok());
  return y;
}

// The activation row of token t as the kernels see it (rounded to f16 for F16 weights).
std::vector<float> activations(const Matrix& x, int64_t t, DType type) {
  std::vector<float> a(static_cast<size_t>(x.cols));
  for (int64_t i = 0; i < x.cols; ++i) a[i] = type == DType::F16 ? fp16_to_f32(f32_to_fp16(x.at(t, i))) : x.at(t, i);
  return a;
}

class MatmulFloatTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (quant::best_isa() == Isa::kScalar) GTEST_SKIP() << "the reference's gemm needs AVX2";
  }
};

TEST_P(MatmulFloatTest, BatchesTakeTheReferencesGemm) {
  const DType type = GetParam();
  const int64_t n_in = 96, n_out = 20, n_tokens = 7;  // 5 row blocks of 4, tokens in 2 + 2 + 2 + 1
  const Weights w = make_weights(type, random_values(size_t(n_in * n_out), 31, 0.5f), n_in, n_out);
  Matrix x(n_tokens, n_in, /*pad=*/5, 32, 1.5f);
  const Matrix y = multiply(w, x, n_out);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const std::vector<float> a = activations(x, t, type);
    for (int64_t r = 0; r < n_out; ++r) {
      ASSERT_EQ(y.at(t, r), gemm_model(&w.values[size_t(r * n_in)], a.data(), n_in)) << "token " << t << " row " << r;
    }
  }
}

// Shapes the reference's gemm declines, and a lone token: its vector dot products.
TEST_P(MatmulFloatTest, LoneTokensAndOtherShapesTakeTheVectorDotProducts) {
  const DType type = GetParam();
  const quant::DotKernel& dot = *quant::dot_kernel(type);
  struct Shape {
    int64_t n_in, n_out, n_tokens;
  };
  for (const Shape s : {Shape{96, 20, 1}, Shape{88, 20, 3}, Shape{96, 18, 3}}) {
    const Weights w = make_weights(type, random_values(size_t(s.n_in * s.n_out), 41, 0.5f), s.n_in, s.n_out);
    Matrix x(s.n_tokens, s.n_in, /*pad=*/1, 42, 1.5f);
    const Matrix y = multiply(w, x, s.n_out);
    for (int64_t t = 0; t < s.n_tokens; ++t) {
      std::vector<std::byte> a(static_cast<size_t>(row_bytes(dot.activation, s.n_in)));
      dot.quantize(&x.at(t, 0), a.data(), s.n_in);
      for (int64_t r = 0; r < s.n_out; ++r) {
        const float expected = dot.dot(s.n_in, w.bytes.data() + r * row_bytes(type, s.n_in), a.data());
        ASSERT_EQ(y.at(t, r), expected) << s.n_in << " x " << s.n_out << ", token " << t << " row " << r;
      }
    }
  }
}

// Inputs whose sum depends on the order, exact in f16 too: one row of 32 values with
// products +2^24 (value 0), -2^24 (value 1) and +1 (value 16, the same gemm lane as value
// 0, where 2^24 + 1 rounds to 2^24). The gemm (two tokens) gets 0; the vector dot
// product (one token) adds them in order and gets 1.
TEST_P(MatmulFloatTest, TheBatchSizePicksTheSummationOrder) {
  const DType type = GetParam();
  const int64_t n_in = 32, n_out = 4;
  std::vector<float> values(size_t(n_in * n_out), 0.0f);
  values[0] = values[1] = 4096.0f;
  values[16] = 1.0f;
  const Weights w = make_weights(type, values, n_in, n_out);
  for (const int64_t n_tokens : {int64_t{2}, int64_t{1}}) {
    Matrix x(n_tokens, n_in);
    for (int64_t t = 0; t < n_tokens; ++t) {
      x.at(t, 0) = 4096.0f;
      x.at(t, 1) = -4096.0f;
      x.at(t, 16) = 1.0f;
    }
    const Matrix y = multiply(w, x, n_out);
    for (int64_t t = 0; t < n_tokens; ++t) EXPECT_EQ(y.at(t, 0), n_tokens == 1 ? 1.0f : 0.0f) << n_tokens << " tokens";
  }
}

// Fast numerics take the same gemm for every batch; on AVX-512 a tile of more than 4
// tokens runs its one-register form (matmul_float_avx512.cpp), 4 rows x 4 tokens at a
// time: the same bits, for partial blocks of rows and tokens too.
TEST_P(MatmulFloatTest, TheAvx512GemmGivesTheGemmsBits) {
  if (!quant::isa_available(Isa::kAvx512)) GTEST_SKIP() << "this CPU lacks avx512 (or PAGODA_MAX_ISA caps it)";
  const DType type = GetParam();
  const int64_t n_in = 160, n_out = 22;  // 5 row blocks of 4 and 2 rows
  const Weights w = make_weights(type, random_values(size_t(n_in * n_out), 51, 0.5f), n_in, n_out);
  for (const int64_t n_tokens : {int64_t{5}, int64_t{8}, int64_t{14}, int64_t{37}}) {
    Matrix x(n_tokens, n_in, /*pad=*/2, 52 + uint32_t(n_tokens), 1.5f);
    ThreadPool pool(2);
    Matmul matmul(Isa::kAvx512, CpuNumerics::kFast);
    Matrix y(n_tokens, n_out, /*pad=*/3);
    ASSERT_TRUE(matmul.run(pool, w.view, x.view(), y.view()).ok());
    for (int64_t t = 0; t < n_tokens; ++t) {
      const std::vector<float> a = activations(x, t, type);
      for (int64_t r = 0; r < n_out; ++r) {
        ASSERT_EQ(y.at(t, r), gemm_model(&w.values[size_t(r * n_in)], a.data(), n_in))
            << n_tokens << " tokens: token " << t << " row " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FloatWeights, MatmulFloatTest, ::testing::Values(DType::F32, DType::F16),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

// BF16 weights under fast numerics: the same gemm (lane by lane fused multiply-adds, the
// lanes reduced in the AVX-512 tree) against activations rounded to bf16, for every token
// count, on AVX2 and, for tiles of more than 4 tokens, in its AVX-512 form.
TEST(MatmulFloat, Bf16WeightsTakeTheGemmUnderFastNumerics) {
  if (quant::best_isa() == Isa::kScalar) GTEST_SKIP() << "the gemm needs AVX2";
  const int64_t n_in = 160, n_out = 22;
  std::vector<float> values = random_values(size_t(n_in * n_out), 61, 0.5f);
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = f32_to_bf16(values[i]);
    values[i] = bf16_to_f32(bits[i]);
  }
  const TensorView w = make_view(bits.data(), DType::BF16, n_in, n_out);
  std::vector<Isa> isas = {Isa::kAvx2};
  if (quant::isa_available(Isa::kAvx512)) isas.push_back(Isa::kAvx512);
  for (const Isa isa : isas) {
    ASSERT_NE(find_fast_float_tile(DType::BF16, isa, n_in), nullptr);
    for (const int64_t n_tokens : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{14}}) {
      Matrix x(n_tokens, n_in, /*pad=*/2, 62 + uint32_t(n_tokens), 1.5f);
      ThreadPool pool(2);
      Matmul matmul(isa, CpuNumerics::kFast);
      Matrix y(n_tokens, n_out, /*pad=*/3);
      ASSERT_TRUE(matmul.run(pool, w, x.view(), y.view()).ok());
      for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<float> a(static_cast<size_t>(n_in));
        for (int64_t i = 0; i < n_in; ++i) a[size_t(i)] = bf16_to_f32(f32_to_bf16(x.at(t, i)));
        for (int64_t r = 0; r < n_out; ++r) {
          ASSERT_EQ(y.at(t, r), gemm_model(&values[size_t(r * n_in)], a.data(), n_in))
              << isa_name(isa) << ", " << n_tokens << " tokens: token " << t << " row " << r;
        }
      }
    }
  }
}

TEST(MatmulFloat, TheGemmIsFoundOnlyWhereTheReferenceTakesIt) {
  const Isa isa = Isa::kAvx2;
  EXPECT_NE(find_reference_float_tile(DType::F32, isa, 64, 172, 2), nullptr);
  EXPECT_NE(find_reference_float_tile(DType::F16, isa, 64, 512, 30), nullptr);
  EXPECT_EQ(find_reference_float_tile(DType::F32, isa, 64, 172, 1), nullptr);   // one token
  EXPECT_EQ(find_reference_float_tile(DType::F32, isa, 172, 64, 8), nullptr);   // 172 % 16 != 0
  EXPECT_EQ(find_reference_float_tile(DType::F16, isa, 64, 18, 8), nullptr);    // 18 % 4 != 0
  EXPECT_EQ(find_reference_float_tile(DType::BF16, isa, 64, 64, 8), nullptr);   // not F32 / F16
  EXPECT_EQ(find_reference_float_tile(DType::Q8_0, isa, 64, 64, 8), nullptr);
  EXPECT_EQ(find_reference_float_tile(DType::F32, Isa::kScalar, 64, 64, 8), nullptr);
}

}  // namespace
}  // namespace pagoda::backend::cpu
