// The CUDA matmuls that share a launch: a layer's q, k and v (Backend::matmuls) and the
// SwiGLU pair with its activation (Backend::matmuls_swiglu), against the exact products
// of x with the weights quant::dequantize_row gives, in f64; and weight rows at every
// alignment the few-token kernel's 16-byte loads must handle (rows of 360 and 200 bytes,
// a matrix starting 2 bytes into its allocation and ending at its last byte).
//
// Tolerances as matmul_test.cpp argues them: |gpu - ref| <= tol * S, S = sqrt(sum of the
// squared terms), tol 1e-4 on the f32 path (n <= 8), 6e-2 on the integer one (n <= 8) and 5e-3 on the f16 one. For
// silu(g) * u, a change dg of g moves it by at most 1.1 |u| dg and du by |silu(g)| du.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

constexpr int64_t kVecMaxTokens = 8;  // weight_kernels.h: the few-token kernel's limit

double tolerance(DType type, int64_t n_tokens) {
  if (n_tokens <= kVecMaxTokens && multiplied_in_integers(type)) return 6e-2;  // x in 8 bits: matmul_test.cpp
  return n_tokens <= kVecMaxTokens || type == DType::F32 || type == DType::BF16 ? 1e-4 : 5e-3;
}

// x[t] . row r of w in f64, and the scale S of its terms, for every token t < n_tokens:
// [t * n_out + r].
using Dot = ExactDot;
std::vector<Dot> exact_products(const HostWeights& w, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<Dot> dots(static_cast<size_t>(n_tokens * w.n_out));
  parallel_for(w.n_out, [&](int64_t r) {
    const std::vector<float> row = w.dequantized_row(r);
    for (int64_t t = 0; t < n_tokens; ++t) {
      dots[static_cast<size_t>(t * w.n_out + r)] = exact_dot(row, x.data() + t * w.n_in);
    }
  });
  return dots;
}

TensorView upload_weights(Backend& gpu, HostWeights& w) {
  Expected<TensorView> view = gpu.upload_weight(w.view());
  EXPECT_TRUE(view.ok()) << view.status().message();
  return view.ok() ? *view : TensorView{};
}

// y [n][n_out] (rows y_stride floats apart) of one product against `exact`; returns the
// mismatches.
int64_t count_mismatches(const std::vector<float>& y, int64_t y_stride, DType type, int64_t n_out,
                         const std::vector<Dot>& exact, int64_t n, const std::string& what) {
  int64_t bad = 0;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < n_out; ++r) {
      const Dot d = exact[static_cast<size_t>(t * n_out + r)];
      const double got = y[static_cast<size_t>(t * y_stride + r)];
      if (!(std::fabs(got - d.value) <= tolerance(type, n) * d.scale) && bad++ == 0) {
        ADD_FAILURE() << what << ": y[" << t << "][" << r << "] = " << got << ", want " << d.value;
      }
    }
  }
  return bad;
}

// SmolLM2's hidden size, 576, is 2.25 of the 256-value blocks of the K and IQ4_XS formats,
// which cannot quantize such a row (no model has one in them); theirs is 768, 3 blocks.
int64_t small_model_width(DType type) { return traits(type).block_size == 256 ? 768 : 576; }

class CudaMatmulsTest : public ::testing::TestWithParam<DType> {};

// q, k and v of a SmolLM2 layer (576 -> 576, 192, 192; 768 -> 768, 192, 192 in the
// 256-value formats) and of a 1B one (2048 -> 2048, 512, 512), outputs in one buffer with
// a shared row stride as the model's scratch has.
TEST_P(CudaMatmulsTest, QkvTogetherMatchEachProduct) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const int64_t small = small_model_width(GetParam());
  for (const int64_t n_in : {small, int64_t{2048}}) {
    const int64_t n_q = n_in, n_kv = n_in == small ? 192 : n_in / 4;
    HostWeights wq = make_weights(GetParam(), n_in, n_q, 10), wk = make_weights(GetParam(), n_in, n_kv, 11),
                wv = make_weights(GetParam(), n_in, n_kv, 12);
    const std::vector<float> x = random_rows(n_in, 9, 13);
    DeviceTensor dx = upload(*gpu, x, n_in, 9);
    const int64_t width = n_q + 2 * n_kv;
    DeviceTensor dy = allocate(*gpu, width, 9);
    const TensorView w[] = {upload_weights(*gpu, wq), upload_weights(*gpu, wk), upload_weights(*gpu, wv)};
    const std::vector<Dot> exact[] = {exact_products(wq, x, 9), exact_products(wk, x, 9), exact_products(wv, x, 9)};
    for (const int64_t n : {1, 3, 8, 9}) {
      fill(*gpu, dy);
      TensorView xv = dx.view;
      xv.ne[1] = n;
      TensorView y[3];
      const int64_t offsets[] = {0, n_q, n_q + n_kv}, widths[] = {n_q, n_kv, n_kv};
      for (int k = 0; k < 3; ++k) {
        y[k] = dy.view;
        y[k].data = static_cast<float*>(dy.view.data) + offsets[k];
        y[k].ne[0] = widths[k];
        y[k].ne[1] = n;
      }
      const MatmulTarget targets[] = {{w[0], y[0]}, {w[1], y[1]}, {w[2], y[2]}};
      gpu->matmuls(xv, targets);
      gpu->synchronize();
      ASSERT_TRUE(gpu->take_error().ok());
      const std::vector<float> whole = download_whole(*gpu, dy);
      const std::string what = std::string(dtype_name(GetParam())) + " n_in " + std::to_string(n_in) + " n " +
                               std::to_string(n);
      for (int k = 0; k < 3; ++k) {
        const std::vector<float> part(whole.begin() + offsets[k], whole.end());
        EXPECT_EQ(count_mismatches(part, width, GetParam(), widths[k], exact[k], n, what + " target " + std::to_string(k)),
                  0);
      }
    }
  }
}

// out = silu(x W_gate^T) * (x W_up^T), fused for a few tokens, through gate and up
// scratch for more; out aliasing gate as the model calls it.
TEST_P(CudaMatmulsTest, SwiGluMatchesTheActivationOfTheProducts) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const int64_t n_in = small_model_width(GetParam()), n_ff = 1536, max_tokens = 33;
  HostWeights wg = make_weights(GetParam(), n_in, n_ff, 20), wu = make_weights(GetParam(), n_in, n_ff, 21);
  const std::vector<float> x = random_rows(n_in, max_tokens, 22);
  DeviceTensor dx = upload(*gpu, x, n_in, max_tokens);
  DeviceTensor gate = allocate(*gpu, n_ff, max_tokens), up = allocate(*gpu, n_ff, max_tokens);
  const TensorView w_gate = upload_weights(*gpu, wg), w_up = upload_weights(*gpu, wu);
  const std::vector<Dot> exact_gate = exact_products(wg, x, max_tokens), exact_up = exact_products(wu, x, max_tokens);
  for (const int64_t n : {1, 2, 8, 9, 33}) {
    fill(*gpu, gate);
    TensorView xv = dx.view, gv = gate.view, uv = up.view;
    xv.ne[1] = gv.ne[1] = uv.ne[1] = n;
    gpu->matmuls_swiglu(xv, w_gate, w_up, gv, uv, gv);
    gpu->synchronize();
    ASSERT_TRUE(gpu->take_error().ok());
    const std::vector<float> out = download_whole(*gpu, gate);
    int64_t bad = 0;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = 0; r < n_ff; ++r) {
        const Dot g = exact_gate[static_cast<size_t>(t * n_ff + r)], u = exact_up[static_cast<size_t>(t * n_ff + r)];
        const double silu = g.value / (1.0 + std::exp(-g.value));
        const double want = silu * u.value;
        const double allowed = tolerance(GetParam(), n) * (1.1 * std::fabs(u.value) * g.scale + std::fabs(silu) * u.scale) + 1e-6;
        const double got = out[static_cast<size_t>(t * n_ff + r)];
        if (!(std::fabs(got - want) <= allowed) && bad++ == 0) {
          ADD_FAILURE() << dtype_name(GetParam()) << " n " << n << ": out[" << t << "][" << r << "] = " << got
                        << ", want " << want << " +- " << allowed;
        }
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, CudaMatmulsTest, ::testing::ValuesIn(kWeightTypes), type_test_name);

// A weight matrix 2 bytes into its allocation, which ends at the matrix's last byte: the
// first and last 16-byte segments of the few-token kernel reach outside the matrix and
// must be read in part. Rows of 360 (Q4_1, 576 values) and 200 bytes (F16, 100 values)
// start at every even offset modulo 16.
TEST(CudaMatmulAlignment, RowsAtAnyEvenAddress) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  struct Case {
    DType type;
    int64_t n_in, n_out;
  };
  for (const Case c : {Case{DType::Q4_1, 576, 37}, Case{DType::F16, 100, 29}, Case{DType::Q6_K, 256, 13}}) {
    HostWeights host = make_weights(c.type, c.n_in, c.n_out, 30);
    Expected<std::unique_ptr<Buffer>> buffer = gpu->allocate(host.bytes.size() + 2);
    ASSERT_TRUE(buffer.ok());
    TensorView w = host.view();
    w.data = static_cast<uint8_t*>((*buffer)->data()) + 2;
    gpu->copy_from_host(host.bytes.data(), w);
    const std::vector<float> x = random_rows(c.n_in, 8, 31);
    const std::vector<Dot> exact = exact_products(host, x, 8);
    DeviceTensor dx = upload(*gpu, x, c.n_in, 8), dy = allocate(*gpu, c.n_out, 8);
    for (const int64_t n : {1, 8}) {
      TensorView xv = dx.view, yv = dy.view;
      xv.ne[1] = yv.ne[1] = n;
      gpu->matmul(w, xv, yv);
      gpu->synchronize();
      ASSERT_TRUE(gpu->take_error().ok());
      EXPECT_EQ(count_mismatches(download_whole(*gpu, dy), c.n_out, c.type, c.n_out, exact, n,
                                 std::string(dtype_name(c.type)) + " at +2, n " + std::to_string(n)),
                0);
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cuda_testing
