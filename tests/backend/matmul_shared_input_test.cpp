// Matmul::run_many (one x, several weights: q, k and v; gate and up) gives each target
// the bits Matmul::run gives it alone, whether it shares one quantized x and one job
// (tiled kernels with one activation format, some wanting block sums and some not) or
// falls back to one run per target (formats that differ, untiled weights, more targets
// than one job takes), for single tokens and batches, both numerics, 1 and 2 threads.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/matmul/matmul.h"
#include "core/dtype.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

constexpr int64_t kInputs = 512;

struct Weights {
  DType type;
  int64_t n_out;
  std::vector<std::byte> bytes;
  TensorView view() { return make_view(bytes.data(), type, kInputs, n_out); }
};

Weights make_weights(DType type, int64_t n_out, uint32_t seed) {
  Weights w{type, n_out, {}};
  const size_t row = size_t(row_bytes(type, kInputs));
  w.bytes.resize(row * size_t(n_out));
  const std::vector<float> values = random_values(size_t(kInputs * n_out), seed, 0.5f);
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, &values[size_t(r * kInputs)], w.bytes.data() + size_t(r) * row, kInputs).ok());
  }
  return w;
}

std::string describe(const std::vector<DType>& types) {
  std::string text;
  for (DType t : types) text += std::string(dtype_name(t)) + " ";
  return text;
}

void expect_same_as_alone(const std::vector<DType>& types) {
  for (const CpuNumerics numerics : {CpuNumerics::kFast, CpuNumerics::kReference}) {
    for (const int threads : {1, 2}) {
      for (const int64_t n_tokens : {1, 3, 16, 70}) {
        SCOPED_TRACE(describe(types) + (numerics == CpuNumerics::kFast ? "fast" : "reference") + ", " +
                     std::to_string(threads) + " threads, " + std::to_string(n_tokens) + " tokens");
        std::vector<Weights> weights;
        // Row counts of k / v size and odd ones: partial strips, panels of different sizes.
        const int64_t rows[] = {64, 20, 44, 36, 8};
        for (size_t i = 0; i < types.size(); ++i) weights.push_back(make_weights(types[i], rows[i % 5], 40u + uint32_t(i)));
        Matrix x(n_tokens, kInputs, 3, 9, 2.0f);  // strided rows
        ThreadPool pool(threads);
        std::vector<Matrix> alone, together;
        std::vector<MatmulTarget> targets;
        for (Weights& w : weights) {
          alone.emplace_back(n_tokens, w.n_out, 0, 11);
          together.emplace_back(n_tokens, w.n_out, 0, 12);  // different junk: every value must be written
        }
        for (size_t i = 0; i < weights.size(); ++i) {
          Matmul matmul(quant::best_isa(), numerics);
          ASSERT_TRUE(matmul.run(pool, weights[i].view(), x.view(), alone[i].view()).ok());
          targets.push_back({weights[i].view(), together[i].view()});
        }
        Matmul matmul(quant::best_isa(), numerics);
        ASSERT_TRUE(matmul.run_many(pool, x.view(), targets).ok());
        for (size_t i = 0; i < weights.size(); ++i) EXPECT_EQ(together[i].data, alone[i].data) << "target " << i;
      }
    }
  }
}

TEST(MatmulSharedInput, OneFormatOneJob) { expect_same_as_alone({DType::Q4_1, DType::Q4_1, DType::Q4_1}); }
TEST(MatmulSharedInput, KQuantsOfDifferentTypesShareQ8K) { expect_same_as_alone({DType::Q4_K, DType::Q4_K, DType::Q6_K}); }
TEST(MatmulSharedInput, KernelsWantingBlockSumsOrNot) { expect_same_as_alone({DType::Q8_0, DType::Q4_0, DType::IQ4_NL}); }
TEST(MatmulSharedInput, DifferentFormatsFallBack) { expect_same_as_alone({DType::Q4_1, DType::Q8_0, DType::Q4_K}); }
TEST(MatmulSharedInput, UntiledWeightsFallBack) { expect_same_as_alone({DType::F16, DType::Q8_0}); }
TEST(MatmulSharedInput, MoreTargetsThanOneJobTakes) {
  expect_same_as_alone({DType::Q5_0, DType::Q5_0, DType::Q5_0, DType::Q5_0, DType::Q5_0});
}

TEST(MatmulSharedInput, ATargetOfTheWrongShapeIsAnError) {
  Weights a = make_weights(DType::Q4_1, 16, 1), b = make_weights(DType::Q4_1, 16, 2);
  Matrix x(2, kInputs, 0, 3);
  Matrix ya(2, 16, 0, 4), yb(2, 15, 0, 5);  // b's output is a column short
  const MatmulTarget targets[] = {{a.view(), ya.view()}, {b.view(), yb.view()}};
  ThreadPool pool(2);
  Matmul matmul(quant::best_isa());
  EXPECT_FALSE(matmul.run_many(pool, x.view(), targets).ok());
}

}  // namespace
}  // namespace pagoda::backend::cpu
