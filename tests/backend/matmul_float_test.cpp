// The float weights' matmuls in reference numerics (backend/cpu/matmul/matmul_float.h), against
// scalar models of the reference build's arithmetic, bit for bit:
//  - batches (2 tokens or more, rows a multiple of 16 values, a multiple of 4 rows): its
//    gemm, one 16-lane accumulator per output, lane l fusing values l, l + 16, ... in
//    order, the lanes then added (i, i + 8), (i, i + 4), (0 + 2) + (1 + 3);
//  - a single token, and the shapes the gemm declines: its vector dot products (the quant
//    layer's dot_f32 / dot_f16, pinned in tests/quant/dot_float_order_test.cpp).
// F16 weights multiply activations rounded to f16 first, in both. Fast numerics take the
// gemm for every batch; its AVX-512 form gives the same bits. BF16 weights (fast numerics
// only) take the BF16 dot-product instruction's arithmetic on every kernel.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/matmul/matmul_float.h"
#include "core/cpu_features.h"
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

// ---- BF16 pairs (fast numerics) -----------------------------------------------------

// x with denormals read as zero, as the BF16 dot-product instruction reads and writes them.
float flushed(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

// One output in kBf16PairChunk's arithmetic: lane l fuses value 2 l + 1, then 2 l, of
// every 32-value chunk, denormals flushed, then the lanes added in the AVX-512 tree.
float bf16_pairs_model(const uint16_t* w, const uint16_t* a, int64_t n) {
  float lane[16] = {};
  const auto fuse = [&](int64_t i, float acc) {
    return flushed(std::fma(flushed(bf16_to_f32(w[i])), flushed(bf16_to_f32(a[i])), acc));
  };
  for (int64_t i = 0; i < n; i += kBf16PairChunk) {
    for (int l = 0; l < 16; ++l) lane[l] = fuse(i + 2 * l, fuse(i + 2 * l + 1, lane[l]));
  }
  float half[8], quarter[4];
  for (int l = 0; l < 8; ++l) half[l] = flushed(lane[l] + lane[l + 8]);
  for (int l = 0; l < 4; ++l) quarter[l] = flushed(half[l] + half[l + 4]);
  return flushed(flushed(quarter[0] + quarter[2]) + flushed(quarter[1] + quarter[3]));
}

// Which values bf16_values draws: normal ones of either sign across 2^-3 .. 2^3; those
// mixed with denormals, values whose products fall below f32's normal range and large
// ones whose sums cancel; or only small ones, whose products and sums lie around and
// below the smallest normal f32, where flushing denormals decides the result.
enum class Bf16Range { kNormal, kExtremes, kTiny };

std::vector<uint16_t> bf16_values(size_t n, uint32_t seed, Bf16Range range) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> bits(n);
  for (uint16_t& b : bits) {
    const uint32_t sign = rng() & 0x8000u, mantissa = rng() & 0x7fu;
    uint32_t exponent = 124 + rng() % 7;
    if (range == Bf16Range::kExtremes) {
      switch (rng() % 6) {
        case 0: exponent = 0; break;                 // denormal (or zero)
        case 1: exponent = 1 + rng() % 40; break;    // tiny: products underflow
        case 2: exponent = 150 + rng() % 20; break;  // large: sums cancel
        default: break;
      }
    } else if (range == Bf16Range::kTiny) {
      exponent = rng() % 8 == 0 ? 0 : 50 + rng() % 20;  // products 2^-154 .. 2^-115
    }
    b = static_cast<uint16_t>(sign | exponent << 7 | mantissa);
  }
  return bits;
}

using TileRun = void (*)(const TileJob&);

// n_tokens tokens against n_out rows of n_in values through `run`, then every output
// against the model, bit for bit.
void expect_bf16_pairs(TileRun run, const char* name, int64_t n_in, int64_t n_out, int64_t n_tokens, Bf16Range range) {
  const std::vector<uint16_t> w = bf16_values(size_t(n_in * n_out), 71, range);
  const std::vector<uint16_t> a = bf16_values(size_t(n_in * n_tokens), 72 + uint32_t(n_tokens), range);
  std::vector<float> y(size_t(n_out * n_tokens), -1.0f);
  TileJob job;
  job.n_in = n_in;
  job.w = reinterpret_cast<const std::byte*>(w.data());
  job.w_stride = size_t(n_in) * sizeof(uint16_t);
  job.n_rows = n_out;
  job.a = reinterpret_cast<const std::byte*>(a.data());
  job.a_stride = job.w_stride;
  job.n_cols = n_tokens;
  job.y = y.data();
  job.y_stride = size_t(n_out);
  run(job);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < n_out; ++r) {
      const float expected = bf16_pairs_model(&w[size_t(r * n_in)], &a[size_t(t * n_in)], n_in);
      const float got = y[size_t(t * n_out + r)];
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected))
          << name << ", " << n_tokens << " tokens: token " << t << " row " << r << ": " << got << " against " << expected;
    }
  }
}

// Every BF16 kernel this CPU runs: the AVX2 one, the AVX-512 one and the one on the BF16
// dot-product instruction, each where the CPU has it.
std::vector<std::pair<TileRun, const char*>> bf16_kernels() {
  std::vector<std::pair<TileRun, const char*>> kernels = {{avx2::gemm_bf16_pairs, "avx2"}};
  if (quant::isa_available(Isa::kAvx512)) kernels.emplace_back(avx512::gemm_bf16_pairs, "avx512");
  if (quant::isa_available(Isa::kAvx512) && cpu_features().avx512_bf16) {
    kernels.emplace_back(avx512bf16::gemm_bf16_pairs, "avx512bf16");
  }
  return kernels;
}

TEST(MatmulFloat, Bf16KernelsTakeTheDotProductInstructionsArithmetic) {
  if (quant::best_isa() == Isa::kScalar) GTEST_SKIP() << "the gemm needs AVX2";
  for (const auto& [run, name] : bf16_kernels()) {
    for (const int64_t n_tokens : {1, 2, 4, 5, 7, 14}) {
      expect_bf16_pairs(run, name, 160, 22, n_tokens, Bf16Range::kNormal);
      expect_bf16_pairs(run, name, 96, 9, n_tokens, Bf16Range::kExtremes);
      expect_bf16_pairs(run, name, 64, 13, n_tokens, Bf16Range::kTiny);
    }
  }
}

// Through the matmul: BF16 weights under fast numerics take the pairs' gemm for every
// token count, against activations rounded to bf16; rows that are not a multiple of the
// chunk take the row-by-row dot products.
TEST(MatmulFloat, Bf16WeightsTakeThePairsGemmUnderFastNumerics) {
  if (quant::best_isa() == Isa::kScalar) GTEST_SKIP() << "the gemm needs AVX2";
  const int64_t n_in = 160, n_out = 22;
  std::vector<float> values = random_values(size_t(n_in * n_out), 61, 0.5f);
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = f32_to_bf16(values[i]);
  const TensorView w = make_view(bits.data(), DType::BF16, n_in, n_out);
  std::vector<Isa> isas = {Isa::kAvx2};
  if (quant::isa_available(Isa::kAvx512)) isas.push_back(Isa::kAvx512);
  for (const Isa isa : isas) {
    ASSERT_NE(find_fast_float_tile(DType::BF16, isa, n_in), nullptr);
    EXPECT_EQ(find_fast_float_tile(DType::BF16, isa, 144), nullptr) << "144 % 32 != 0";
    for (const int64_t n_tokens : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{14}}) {
      Matrix x(n_tokens, n_in, /*pad=*/2, 62 + uint32_t(n_tokens), 1.5f);
      ThreadPool pool(2);
      Matmul matmul(isa, CpuNumerics::kFast);
      Matrix y(n_tokens, n_out, /*pad=*/3);
      ASSERT_TRUE(matmul.run(pool, w, x.view(), y.view()).ok());
      for (int64_t t = 0; t < n_tokens; ++t) {
        std::vector<uint16_t> a(static_cast<size_t>(n_in));
        for (int64_t i = 0; i < n_in; ++i) a[size_t(i)] = f32_to_bf16(x.at(t, i));
        for (int64_t r = 0; r < n_out; ++r) {
          ASSERT_EQ(y.at(t, r), bf16_pairs_model(&bits[size_t(r * n_in)], a.data(), n_in))
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
