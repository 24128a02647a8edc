// matmul for every weight type: against a double-precision dot of the dequantized weights
// and the dequantized activations (the exact math, so only f32 rounding may differ), and
// against the unquantized activations within the bound their 8-bit rounding implies; the
// tiled schedule against the row schedule; the SIMD kernels against the scalar ones.

#include "backend/cpu/matmul/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul_tiles.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,  DType::Q4_0,
                                  DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K,  DType::Q3_K,
                                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

struct Weights {
  DType type;
  int64_t n_in, n_out;
  std::vector<std::byte> bytes;
  std::vector<float> dequantized;  // [n_out][n_in]
  TensorView view() { return make_view(bytes.data(), type, n_in, n_out); }
  const std::byte* row(int64_t r) const { return bytes.data() + r * row_bytes(type, n_in); }
};

Weights make_weights(DType type, int64_t n_in, int64_t n_out, uint32_t seed) {
  Weights w{type, n_in, n_out, std::vector<std::byte>(size_t(row_bytes(type, n_in) * n_out)),
            std::vector<float>(size_t(n_in * n_out))};
  const std::vector<float> values = random_values(size_t(n_in * n_out), seed, 0.5f);
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, values.data() + r * n_in, w.bytes.data() + r * row_bytes(type, n_in), n_in).ok());
    EXPECT_TRUE(quant::dequantize_row(type, w.row(r), w.dequantized.data() + r * n_in, n_in).ok());
  }
  return w;
}

// The activation row as the dot kernel sees it (quantized, then dequantized), plus for
// Q8_1 the per-block difference between the stored s = half(d * sum q) and d * sum q.
struct ActivationRow {
  std::vector<float> values;
  std::vector<double> s_error;  // per 32-value block (Q8_1 only)
};

ActivationRow activation_as_seen(DType weight, const float* x, int64_t n) {
  const quant::DotKernel* k = quant::dot_kernel(weight);
  ActivationRow out{std::vector<float>(size_t(n)), {}};
  if (k->activation == DType::F32) {
    out.values.assign(x, x + n);
    return out;
  }
  std::vector<std::byte> q(size_t(row_bytes(k->activation, n)));
  k->quantize(x, q.data(), n);
  if (k->activation != DType::Q8_1) {
    EXPECT_TRUE(quant::dequantize_row(k->activation, q.data(), out.values.data(), n).ok());
    return out;
  }
  const auto* blocks = reinterpret_cast<const quant::BlockQ8_1*>(q.data());
  for (int64_t b = 0; b < n / 32; ++b) {
    const double d = fp16_to_f32(blocks[b].d);
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      out.values[size_t(b * 32 + i)] = float(d * blocks[b].qs[i]);
      sum += blocks[b].qs[i];
    }
    out.s_error.push_back(double(fp16_to_f32(blocks[b].s)) - d * sum);
  }
  return out;
}

// Q4_1 / Q5_1 blocks start with their halves d and m.
double block_min(const Weights& w, int64_t row, int64_t block) {
  const size_t block_bytes = size_t(traits(w.type).type_size);
  uint16_t m;
  std::memcpy(&m, w.row(row) + block * block_bytes + 2, 2);
  return fp16_to_f32(m);
}

void check_against_reference(const Weights& w, const Matrix& x, const Matrix& y) {
  for (int64_t t = 0; t < x.rows; ++t) {
    const ActivationRow a = activation_as_seen(w.type, &x.data[size_t(t * x.stride)], w.n_in);
    for (int64_t r = 0; r < w.n_out; ++r) {
      const float* wr = &w.dequantized[size_t(r * w.n_in)];
      double exact = 0, magnitude = 0, rounding_bound = 0;
      for (int64_t i = 0; i < w.n_in; ++i) {
        exact += double(wr[i]) * a.values[size_t(i)];
        magnitude += std::fabs(double(wr[i]) * a.values[size_t(i)]);
        rounding_bound += std::fabs(double(wr[i])) * std::fabs(double(x.at(t, i)) - a.values[size_t(i)]);
      }
      double s_rounding = 0;  // Q8_1: what rounding s to half moves the result by
      for (size_t b = 0; b < a.s_error.size(); ++b) {
        exact += block_min(w, r, int64_t(b)) * a.s_error[b];
        s_rounding += std::fabs(block_min(w, r, int64_t(b)) * a.s_error[b]);
      }
      const double got = y.at(t, r);
      ASSERT_NEAR(got, exact, 2e-5 * magnitude + 1e-6) << dtype_name(w.type) << " row " << r << " token " << t;
      double truth = 0;
      for (int64_t i = 0; i < w.n_in; ++i) truth += double(wr[i]) * x.at(t, i);
      ASSERT_NEAR(got, truth, 1.01 * rounding_bound + s_rounding + 2e-5 * magnitude + 1e-6)
          << dtype_name(w.type);
    }
  }
}

class MatmulTest : public ::testing::TestWithParam<DType> {
 protected:
  ThreadPool pool{2};
  Matmul matmul{quant::best_isa()};
};

TEST_P(MatmulTest, MatchesDequantizedReference) {
  const DType type = GetParam();
  for (const CpuNumerics numerics : {CpuNumerics::kFast, CpuNumerics::kReference}) {
    Matmul m(quant::best_isa(), numerics);
    for (int64_t n_in : {256, 768}) {
      Weights w = make_weights(type, n_in, 37, 100 + uint32_t(n_in));
      for (int64_t tokens : {1, 3, 9, 70}) {
        Matrix x(tokens, n_in, 5, 200 + uint32_t(tokens), 2.0f);
        Matrix y(tokens, 37, 11);
        ASSERT_TRUE(m.run(pool, w.view(), x.view(), y.view()).ok());
        check_against_reference(w, x, y);
      }
    }
  }
}

// Both kernels of a type (the one mirroring the reference's rounding, and the fastest)
// against the row schedule: the same integer math, so only f32 rounding may differ.
TEST_P(MatmulTest, TiledAgreesWithRows) {
  const DType type = GetParam();
  if (find_tile_kernel(type, quant::best_isa()) == nullptr) {
    GTEST_SKIP() << dtype_name(type) << " has no tiled kernel on " << isa_name(quant::best_isa());
  }
  Weights w = make_weights(type, 512, 45, 7);
  Matrix x(67, 512, 3, 8, 1.5f);
  for (const CpuNumerics numerics : {CpuNumerics::kReference, CpuNumerics::kFast}) {
    const bool mirror = numerics == CpuNumerics::kReference;
    Matmul m(quant::best_isa(), numerics);
    Matrix rows(67, 45), tiled(67, 45, 2);
    ASSERT_TRUE(m.run(pool, w.view(), x.view(), rows.view(), MatmulSchedule::kRows).ok());
    ASSERT_TRUE(m.run(pool, w.view(), x.view(), tiled.view(), MatmulSchedule::kTiled).ok());
    for (int64_t t = 0; t < 67; ++t) {
      for (int64_t r = 0; r < 45; ++r) {
        double magnitude = 0;
        for (int64_t i = 0; i < 512; ++i) magnitude += std::fabs(double(w.dequantized[size_t(r * 512 + i)]) * x.at(t, i));
        ASSERT_NEAR(tiled.at(t, r), rows.at(t, r), 1e-5 * magnitude + 1e-6)
            << (mirror ? "mirroring" : "fastest") << " kernel, token " << t << " row " << r;
      }
    }
  }
}

// The reference multiplies the last n % 4 tokens of a batch one at a time (its gemv); our
// kernels reach that arithmetic either from a repacked strip or straight from the stored
// blocks (a lone token). Both must give the same bits.
TEST_P(MatmulTest, TailTokensMatchLoneTokensBitForBit) {
  const DType type = GetParam();
  const TileKernel* tile = find_tile_kernel(type, quant::best_isa(), CpuNumerics::kReference);
  if (tile == nullptr || !tile->mirrors_reference) {
    GTEST_SKIP() << dtype_name(type) << " has no kernel mirroring the reference on " << isa_name(quant::best_isa());
  }
  Matmul matmul(quant::best_isa(), CpuNumerics::kReference);
  Weights w = make_weights(type, 512, 24, 11);
  Matrix batch(5, 512, 0, 12), lone(1, 512);
  for (int64_t i = 0; i < 512; ++i) lone.at(0, i) = batch.at(4, i);
  Matrix batch_y(5, 24), lone_y(1, 24);
  ASSERT_TRUE(matmul.run(pool, w.view(), batch.view(), batch_y.view(), MatmulSchedule::kTiled).ok());
  ASSERT_TRUE(matmul.run(pool, w.view(), lone.view(), lone_y.view(), MatmulSchedule::kTiled).ok());
  for (int64_t r = 0; r < 24; ++r) ASSERT_EQ(batch_y.at(4, r), lone_y.at(0, r)) << "row " << r;
}

TEST_P(MatmulTest, SimdAgreesWithScalar) {
  const DType type = GetParam();
  if (quant::best_isa() == Isa::kScalar) GTEST_SKIP() << "this CPU runs only the scalar kernels";
  Matmul scalar(Isa::kScalar);
  Weights w = make_weights(type, 512, 21, 9);
  Matrix x(10, 512, 0, 10);
  Matrix simd_y(10, 21), scalar_y(10, 21);
  ASSERT_TRUE(matmul.run(pool, w.view(), x.view(), simd_y.view()).ok());
  ASSERT_TRUE(scalar.run(pool, w.view(), x.view(), scalar_y.view()).ok());
  for (int64_t t = 0; t < 10; ++t)
    for (int64_t r = 0; r < 21; ++r) ASSERT_NEAR(simd_y.at(t, r), scalar_y.at(t, r), 1e-4 * (1 + std::fabs(scalar_y.at(t, r))));
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, MatmulTest, ::testing::ValuesIn(kWeightTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MatmulErrors, RejectsBadShapesAndTypes) {
  ThreadPool pool(1);
  Matmul matmul(quant::best_isa());
  Weights w = make_weights(DType::Q8_0, 64, 4, 1);
  Matrix x(2, 64), y(2, 4), wrong(2, 5);
  EXPECT_EQ(matmul.run(pool, w.view(), x.view(), wrong.view()).code(), ErrorCode::kInvalidArgument);
  std::vector<std::byte> i8(64 * 4);
  EXPECT_EQ(matmul.run(pool, make_view(i8.data(), DType::I8, 64, 4), x.view(), y.view()).code(),
            ErrorCode::kUnsupported);
  std::vector<float> f(40 * 4);
  Matrix x40(2, 40);
  EXPECT_TRUE(matmul.run(pool, make_view(f.data(), DType::F32, 40, 4), x40.view(), y.view()).ok());
}

}  // namespace
}  // namespace pagoda::backend::cpu
