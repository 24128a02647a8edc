// Elementwise ops, norms, rope and get_rows against straightforward double references.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ops/norms.h"
#include "core/fp16.h"
#include "quant/dequantize.h"
#include "quant/dot.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::close;
using testing::Matrix;
using testing::random_values;

class OpsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = make_cpu_backend({.n_threads = 2});
  void TearDown() override { EXPECT_TRUE(backend->take_error().ok()); }
};

TEST_F(OpsTest, AddAndAddBiasOnStridedRows) {
  for (int64_t n : {1, 7, 33, 4097}) {
    Matrix a(5, n, 3, 1), b(5, n, 0, 2), out(5, n, 1);
    backend->add(a.view(), b.view(), out.view());
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < n; ++c) ASSERT_EQ(out.at(r, c), a.at(r, c) + b.at(r, c));
    std::vector<float> bias = random_values(static_cast<size_t>(n), 3);
    std::vector<uint16_t> bias16(bias.size());
    for (size_t i = 0; i < bias.size(); ++i) bias16[i] = f32_to_fp16(bias[i]);
    Matrix y = out;
    backend->add_bias(y.view(), make_view(bias.data(), DType::F32, n));
    backend->add_bias(y.view(), make_view(bias16.data(), DType::F16, n));
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < n; ++c)
        ASSERT_EQ(y.at(r, c), out.at(r, c) + bias[static_cast<size_t>(c)] + fp16_to_f32(bias16[static_cast<size_t>(c)]));
  }
}

TEST_F(OpsTest, SiluMulMatchesDouble) {
  Matrix gate(9, 301, 0, 4, 3.0f), up(9, 301, 2, 5), out(9, 301);
  backend->silu_mul(gate.view(), up.view(), out.view());
  for (int64_t r = 0; r < 9; ++r) {
    for (int64_t c = 0; c < 301; ++c) {
      const double g = gate.at(r, c);
      ASSERT_TRUE(close(out.at(r, c), g / (1.0 + std::exp(-g)) * up.at(r, c), 1e-6, 1e-5));
    }
  }
}

TEST_F(OpsTest, GeluUsesTheHalfTable) {
  Matrix x(4, 1000, 0, 6, 4.0f);
  x.at(0, 0) = -12.0f;
  x.at(0, 1) = 11.0f;
  Matrix y = x;
  backend->gelu(y.view());
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 1000; ++c) {
      const double v = x.at(r, c);
      const double ref = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * v * (1.0 + 0.044715 * v * v)));
      // The input and the result are rounded to half: about 2^-10 relative each.
      ASSERT_TRUE(close(y.at(r, c), ref, 1e-4, 3e-3)) << v;
    }
  }
  EXPECT_EQ(y.at(0, 0), 0.0f);
  EXPECT_EQ(y.at(0, 1), 11.0f);
}

TEST_F(OpsTest, RmsNormOnHeadViews) {
  // A [3 tokens][4 heads][40] matrix viewed as heads, every row normalized alone.
  Matrix m(3, 160, 8, 7, 2.0f);
  TensorView heads = split_rows_into_heads(m.view(), 40);
  std::vector<float> w = random_values(40, 8);
  Matrix out_m(3, 160, 0);
  TensorView out = split_rows_into_heads(out_m.view(), 40);
  backend->rms_norm(heads, make_view(w.data(), DType::F32, 40), 1e-5f, out);
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t h = 0; h < 4; ++h) {
      double ss = 0;
      for (int64_t i = 0; i < 40; ++i) ss += double(m.at(t, h * 40 + i)) * m.at(t, h * 40 + i);
      const double scale = 1.0 / std::sqrt(ss / 40 + 1e-5);
      for (int64_t i = 0; i < 40; ++i)
        ASSERT_TRUE(close(out_m.at(t, h * 40 + i), m.at(t, h * 40 + i) * scale * w[size_t(i)], 1e-6, 1e-5));
    }
  }
}

// Per row, double sum += double(float(x * x)), values in order (the reference build's
// order, which the vector form keeps), then the mean and scale in float: exactly.
TEST_F(OpsTest, RmsNormSumsSquaresInTheReferenceOrder) {
  for (const Isa max_isa : {Isa::kScalar, Isa::kAmx}) {
    auto b = make_cpu_backend({.n_threads = 2, .max_isa = max_isa});
    for (const int64_t n : {1, 3, 7, 40, 576, 1001}) {
      for (const int64_t rows : {1, 5, 8, 9, 19}) {
        Matrix x(rows, n, 3, static_cast<uint32_t>(n + rows), 1.0f), y(rows, n, 1);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < n; ++c) x.at(r, c) = std::ldexp(x.at(r, c), static_cast<int>((c * 7 + r * 13) % 41) - 20);
        std::vector<float> w = random_values(static_cast<size_t>(n), 12);
        b->rms_norm(x.view(), make_view(w.data(), DType::F32, n), 1e-6f, y.view());
        for (int64_t r = 0; r < rows; ++r) {
          double sum = 0.0;
          for (int64_t c = 0; c < n; ++c) sum += static_cast<double>(x.at(r, c) * x.at(r, c));
          const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + 1e-6f);
          for (int64_t c = 0; c < n; ++c)
            ASSERT_EQ(y.at(r, c), x.at(r, c) * scale * w[static_cast<size_t>(c)]) << n << " " << rows << " " << r;
        }
      }
    }
    EXPECT_TRUE(b->take_error().ok());
  }
}

// The residual add fused with the norm after it: x as add leaves it and y as rms_norm
// gives it on that x, bit for bit, on strided rows and any row count; y aliasing x is an
// error that writes nothing.
TEST_F(OpsTest, AddRmsNormIsAddThenRmsNorm) {
  for (const int64_t rows : {1, 2, 9, 33}) {
    Matrix x(rows, 576, 3, 20 + static_cast<uint32_t>(rows)), delta(rows, 576, 1, 21), y(rows, 576, 2);
    Matrix expected_x = x, expected_y = y;
    std::vector<float> w = random_values(576, 22);
    const TensorView wv = make_view(w.data(), DType::F32, 576);
    backend->add(expected_x.view(), delta.view(), expected_x.view());
    backend->rms_norm(expected_x.view(), wv, 1e-5f, expected_y.view());
    backend->add_rms_norm(x.view(), delta.view(), wv, 1e-5f, y.view());
    EXPECT_EQ(x.data, expected_x.data) << rows;
    EXPECT_EQ(y.data, expected_y.data) << rows;
  }
  Matrix x(2, 16, 0, 23), before = x;
  std::vector<float> w = random_values(16, 24);
  backend->add_rms_norm(x.view(), x.view(), make_view(w.data(), DType::F32, 16), 1e-5f, x.view());
  EXPECT_FALSE(backend->take_error().ok());
  EXPECT_EQ(x.data, before.data);
}

// The vector sums themselves, as doubles: rounding them to a float mean hides most changes
// of order (29 bits of headroom), so this is where a reordering shows.
TEST(RmsNormSums, EightRowsAtOnceKeepEachRowsOrder) {
  if (!quant::isa_available(Isa::kAvx2)) GTEST_SKIP() << "this CPU lacks AVX2";
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const int64_t n : {1, 3, 4, 5, 40, 576, 1001}) {
    for (int n_rows = 1; n_rows <= cpu::kSumRows; ++n_rows) {
      std::vector<std::vector<float>> rows(static_cast<size_t>(n_rows), std::vector<float>(static_cast<size_t>(n)));
      const float* pointers[cpu::kSumRows];
      for (int r = 0; r < n_rows; ++r) {
        for (int64_t c = 0; c < n; ++c)
          rows[size_t(r)][size_t(c)] = std::ldexp(normal(rng), static_cast<int>((c * 7 + r * 13) % 41) - 20);
        pointers[r] = rows[size_t(r)].data();
      }
      double sums[cpu::kSumRows];
      cpu::avx2::sums_of_squares_rows(pointers, n_rows, n, sums);
      for (int r = 0; r < n_rows; ++r) {
        double expected = 0.0;
        for (const float x : rows[size_t(r)]) expected += static_cast<double>(x * x);
        ASSERT_EQ(sums[r], expected) << n << " values, row " << r << " of " << n_rows;
      }
    }
  }
}

TEST_F(OpsTest, LayerNormInPlace) {
  Matrix x(6, 257, 3, 9, 5.0f);
  for (int64_t c = 0; c < 257; ++c) x.at(2, c) += 100.0f;  // a large mean
  std::vector<float> w = random_values(257, 10), b = random_values(257, 11);
  Matrix y = x;
  backend->layer_norm(y.view(), make_view(w.data(), DType::F32, 257), make_view(b.data(), DType::F32, 257), 1e-5f,
                      y.view());
  for (int64_t r = 0; r < 6; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < 257; ++c) mean += x.at(r, c);
    mean /= 257;
    for (int64_t c = 0; c < 257; ++c) var += (x.at(r, c) - mean) * (x.at(r, c) - mean);
    var /= 257;
    for (int64_t c = 0; c < 257; ++c) {
      const double ref = (x.at(r, c) - mean) / std::sqrt(var + 1e-5) * w[size_t(c)] + b[size_t(c)];
      ASSERT_TRUE(close(y.at(r, c), ref, 1e-5, 1e-4));
    }
  }
}

void rope_reference(const Matrix& x, Matrix& out, int64_t head_dim, const std::vector<int32_t>& pos,
                    const RopeParams& p) {
  out = x;
  for (int64_t t = 0; t < x.rows; ++t) {
    for (int64_t h = 0; h < x.cols / head_dim; ++h) {
      for (int32_t i = 0; i < p.n_dims / 2; ++i) {
        double theta = pos[size_t(t)] * std::pow(double(p.freq_base), -2.0 * i / p.n_dims);
        if (p.freq_factors) theta /= p.freq_factors[i];
        theta *= p.freq_scale;
        const int64_t a = h * head_dim + (p.neox ? i : 2 * i);
        const int64_t b = h * head_dim + (p.neox ? i + p.n_dims / 2 : 2 * i + 1);
        out.at(t, a) = float(x.at(t, a) * std::cos(theta) - x.at(t, b) * std::sin(theta));
        out.at(t, b) = float(x.at(t, a) * std::sin(theta) + x.at(t, b) * std::cos(theta));
      }
    }
  }
}

// q and k in one job: each head rotated as rope rotates it, bit for bit, with another head
// count in k and a strided q.
TEST_F(OpsTest, RopePairIsRopeOfEach) {
  const std::vector<int32_t> positions = {3, 4, 9, 100, 2047, 7};
  for (const bool neox : {false, true}) {
    const RopeParams p{.n_dims = 12, .freq_base = 500000.0f, .freq_scale = 1.0f, .neox = neox};
    Matrix q(6, 9 * 16, 5, 30), k(6, 3 * 16, 0, 31);
    Matrix q_each = q, k_each = k;
    backend->rope_pair(split_rows_into_heads(q.view(), 16), split_rows_into_heads(k.view(), 16), positions, p);
    backend->rope(split_rows_into_heads(q_each.view(), 16), positions, p);
    backend->rope(split_rows_into_heads(k_each.view(), 16), positions, p);
    EXPECT_EQ(q.data, q_each.data);
    EXPECT_EQ(k.data, k_each.data);
    EXPECT_NE(q.data, Matrix(6, 9 * 16, 5, 30).data) << "rotated";
  }
}

TEST_F(OpsTest, RopeNormalAndNeox) {
  const std::vector<int32_t> positions = {0, 1, 5, 17, 300};
  std::vector<float> factors = {1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 1.0f, 1.0f, 3.0f};
  for (bool neox : {false, true}) {
    for (int32_t n_dims : {16, 10}) {  // all of the head, or its leading dims only
      RopeParams p;
      p.n_dims = n_dims;
      p.freq_base = 10000.0f;
      p.freq_scale = n_dims == 16 ? 1.0f : 0.25f;
      p.neox = neox;
      p.freq_factors = n_dims == 16 ? factors.data() : nullptr;
      Matrix x(5, 48, 4, 12), ref(5, 48);
      rope_reference(x, ref, 16, positions, p);
      TensorView heads = split_rows_into_heads(x.view(), 16);
      backend->rope(heads, positions, p);
      // The angle is built by repeated float multiplication, as the reference build does:
      // relative error up to ~n_dims * 2^-24, i.e. an absolute error growing with the position.
      for (int64_t t = 0; t < 5; ++t)
        for (int64_t c = 0; c < 48; ++c)
          ASSERT_TRUE(close(x.at(t, c), ref.at(t, c), 2e-5 + 4e-6 * positions[size_t(t)], 1e-4))
              << neox << " " << n_dims << " " << t << " " << c;
    }
  }
}

TEST_F(OpsTest, GetRowsDequantizesAnyType) {
  const int64_t dim = 512, vocab = 11;
  std::vector<float> table = random_values(size_t(dim * vocab), 13);
  const std::vector<int32_t> ids = {3, 0, 10, 3};
  for (DType type : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::IQ4_NL}) {
    std::vector<std::byte> q(size_t(row_bytes(type, dim) * vocab));
    for (int64_t r = 0; r < vocab; ++r) {
      ASSERT_TRUE(quant::quantize_row(type, table.data() + r * dim, q.data() + r * row_bytes(type, dim), dim).ok());
    }
    Matrix out(4, dim, 5);
    backend->get_rows(make_view(q.data(), type, dim, vocab), ids, out.view());
    std::vector<float> expected(static_cast<size_t>(dim));
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_TRUE(quant::dequantize_row(type, q.data() + ids[i] * row_bytes(type, dim), expected.data(), dim).ok());
      for (int64_t c = 0; c < dim; ++c) ASSERT_EQ(out.at(int64_t(i), c), expected[size_t(c)]) << dtype_name(type);
    }
  }
}

TEST_F(OpsTest, BadInputIsReportedNotExecuted) {
  Matrix a(2, 8), b(2, 9), out(2, 8);
  backend->add(a.view(), b.view(), out.view());
  EXPECT_EQ(backend->take_error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(backend->take_error().ok());  // taken

  std::vector<float> table(16 * 4);
  const std::vector<int32_t> ids = {4};
  Matrix rows(1, 16);
  backend->get_rows(make_view(table.data(), DType::F32, 16, 4), ids, rows.view());
  EXPECT_EQ(backend->take_error().code(), ErrorCode::kInvalidArgument);

  RopeParams p;
  p.n_dims = 3;
  const std::vector<int32_t> pos = {0, 1};
  backend->rope(split_rows_into_heads(a.view(), 8), pos, p);
  EXPECT_EQ(backend->take_error().code(), ErrorCode::kInvalidArgument);
}

TEST_F(OpsTest, MemoryAndCopies) {
  auto buffer = backend->allocate(1000);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % 64, 0u);
  EXPECT_EQ((*buffer)->size(), 1000u);
  Matrix m(3, 5, 2, 14);
  std::vector<float> host(15);
  backend->copy_to_host(m.view(), host.data());
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(host[size_t(r * 5 + c)], m.at(r, c));
  Matrix back(3, 5, 1);
  backend->copy_from_host(host.data(), back.view());
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(back.at(r, c), m.at(r, c));
  std::vector<std::byte> weights(34 * 4);
  TensorView w = make_view(weights.data(), DType::Q8_0, 32, 4);
  auto uploaded = backend->upload_weight(w);
  ASSERT_TRUE(uploaded.ok());
  // A copy of the same bytes (weight_copies_test.cpp: where and when).
  EXPECT_EQ(std::memcmp(uploaded->data, w.data, weights.size()), 0);
  EXPECT_EQ(uploaded->type, w.type);
  EXPECT_EQ(uploaded->ne[0], w.ne[0]);
  EXPECT_EQ(uploaded->ne[1], w.ne[1]);

  KvCacheShape bad;
  bad.n_layers = 1;
  bad.n_kv_heads = 2;
  bad.head_dim = 40;
  bad.n_blocks = 4;
  bad.type = DType::Q8_0;
  EXPECT_EQ(backend->allocate_kv(bad).status().code(), ErrorCode::kInvalidArgument);
  bad.type = DType::Q4_0;
  EXPECT_EQ(backend->allocate_kv(bad).status().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace pagoda::backend
