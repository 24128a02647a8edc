// The CUDA backend's elementwise ops, norms and rope against the CPU backend (kFast) on the
// same random inputs, strided rows and head views included. The GPU's outputs are
// poisoned with NaN first, so a value it never writes fails.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/test_util.h"
#include "core/fp16.h"
#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

using cuda_testing::DeviceTensor;

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_SKIP_WITHOUT_CUDA();
    gpu_ = cuda_testing::make_backend();
    ASSERT_NE(gpu_, nullptr);
    cpu_ = make_cpu_backend({.n_threads = 2, .numerics = CpuNumerics::kFast});
  }
  void TearDown() override {
    if (gpu_ == nullptr) return;
    gpu_->synchronize();
    EXPECT_TRUE(gpu_->take_error().ok());
    EXPECT_TRUE(cpu_->take_error().ok());
  }

  // A device copy of a host Matrix in its [rows][stride] layout: `view` shows the same
  // columns with the same row stride as Matrix::view().
  DeviceTensor upload(const Matrix& m) {
    DeviceTensor d = cuda_testing::allocate(*gpu_, m.cols, m.rows, m.stride - m.cols);
    if (d.buffer != nullptr) gpu_->copy_from_host(m.data.data(), d.whole());
    return d;
  }
  // A device matrix of m's layout holding NaN everywhere.
  DeviceTensor poisoned_like(const Matrix& m) { return cuda_testing::allocate(*gpu_, m.cols, m.rows, m.stride - m.cols); }
  // The device matrix back as a host Matrix of m's layout.
  Matrix download(const DeviceTensor& d, const Matrix& layout) {
    Matrix back = layout;
    back.data = cuda_testing::download_whole(*gpu_, d);
    return back;
  }
  // The weight vector on the device (upload_weight, as a model's are).
  TensorView upload_vector(void* host, DType type, int64_t n) {
    Expected<TensorView> w = gpu_->upload_weight(make_view(host, type, n));
    EXPECT_TRUE(w.ok()) << w.status().message();
    return w.ok() ? *w : TensorView{};
  }

  std::unique_ptr<Backend> gpu_, cpu_;
};

// Every shown value of `gpu` within atol + rtol |cpu| of `cpu` (NaN fails); returns the
// share that is bit for bit equal.
double expect_close(const Matrix& gpu, const Matrix& cpu, double atol, double rtol, const std::string& what) {
  int failures = 0;
  int64_t equal = 0;
  for (int64_t r = 0; r < cpu.rows; ++r) {
    for (int64_t c = 0; c < cpu.cols; ++c) {
      const float g = gpu.at(r, c), e = cpu.at(r, c);
      equal += (g == e || (std::isnan(g) && std::isnan(e))) ? 1 : 0;
      if (!testing::close(g, e, atol, rtol) && !(g == e) && failures++ < 5) {
        ADD_FAILURE() << what << ": row " << r << " col " << c << ": gpu " << g << " cpu " << e;
      }
    }
  }
  EXPECT_EQ(failures, 0) << what;
  return static_cast<double>(equal) / static_cast<double>(cpu.rows * cpu.cols);
}

// add and add_bias are single IEEE additions of the same inputs on both: bit for bit.
TEST_F(CudaOpsTest, AddAndAddBiasAreExact) {
  for (int64_t n : {1, 33, 4097}) {
    Matrix a(37, n, 3, 1), b(37, n, 1, 2), out(37, n, 2);
    DeviceTensor da = upload(a), db = upload(b), dout = poisoned_like(out);
    cpu_->add(a.view(), b.view(), out.view());
    gpu_->add(da.view, db.view, dout.view);
    expect_close(download(dout, out), out, 0, 0, "add");

    gpu_->add(da.view, db.view, da.view);  // out aliasing a
    expect_close(download(da, a), out, 0, 0, "add in place");

    std::vector<float> bias = testing::random_values(static_cast<size_t>(n), 3);
    std::vector<uint16_t> bias16(bias.size());
    for (size_t i = 0; i < bias.size(); ++i) bias16[i] = f32_to_fp16(bias[i]);
    cpu_->add_bias(out.view(), make_view(bias.data(), DType::F32, n));
    cpu_->add_bias(out.view(), make_view(bias16.data(), DType::F16, n));
    gpu_->add_bias(dout.view, upload_vector(bias.data(), DType::F32, n));
    gpu_->add_bias(dout.view, upload_vector(bias16.data(), DType::F16, n));
    expect_close(download(dout, out), out, 0, 0, "add_bias");
  }
}

// The same float operations on the same values; the double sum of squares adds in
// another order, which moves the float mean (and so the scale, by 1 ulp) only where the
// sum falls within ~n 2^-53 of a rounding boundary: outputs within a few ulp, and nearly
// all of them (expected: every one of these rows) bit for bit.
TEST_F(CudaOpsTest, RmsNormMatchesCpu) {
  for (int64_t n : {64, 576, 2048, 4103}) {
    Matrix x(23, n, 5, 10 + static_cast<uint32_t>(n), 3.0f), y(23, n, 1);
    std::vector<float> w = testing::random_values(static_cast<size_t>(n), 11);
    DeviceTensor dx = upload(x), dy = poisoned_like(y);
    const TensorView dw = upload_vector(w.data(), DType::F32, n);
    const TensorView hw = make_view(w.data(), DType::F32, n);
    cpu_->rms_norm(x.view(), hw, 1e-6f, y.view());
    gpu_->rms_norm(dx.view, dw, 1e-6f, dy.view);
    EXPECT_GE(expect_close(download(dy, y), y, 1e-30, 5e-7, "rms_norm"), 0.99);
    gpu_->rms_norm(dx.view, dw, 1e-6f, dx.view);  // in place
    expect_close(download(dx, x), y, 1e-30, 5e-7, "rms_norm in place");
  }
  // Per head (qk-norm): rows of 128 in a head view of strided token rows.
  Matrix x(19, 8 * 128, 7, 12), y(19, 8 * 128, 3);
  std::vector<float> w = testing::random_values(128, 13);
  DeviceTensor dx = upload(x), dy = poisoned_like(y);
  cpu_->rms_norm(split_rows_into_heads(x.view(), 128), make_view(w.data(), DType::F32, 128), 1e-5f,
                 split_rows_into_heads(y.view(), 128));
  gpu_->rms_norm(split_rows_into_heads(dx.view, 128), upload_vector(w.data(), DType::F32, 128), 1e-5f,
                 split_rows_into_heads(dy.view, 128));
  expect_close(download(dy, y), y, 1e-30, 5e-7, "rms_norm on heads");
}

// The residual add and the norm in one kernel: x exactly as add leaves it, y as rms_norm
// gives it on that x.
TEST_F(CudaOpsTest, AddRmsNormMatchesAddThenRmsNorm) {
  for (int64_t n : {64, 576, 2048}) {
    Matrix x(9, n, 3, 40 + static_cast<uint32_t>(n)), delta(9, n, 1, 41), y(9, n, 2);
    std::vector<float> w = testing::random_values(static_cast<size_t>(n), 42);
    DeviceTensor dx = upload(x), dd = upload(delta), dy = poisoned_like(y);
    cpu_->add_rms_norm(x.view(), delta.view(), make_view(w.data(), DType::F32, n), 1e-5f, y.view());
    gpu_->add_rms_norm(dx.view, dd.view, upload_vector(w.data(), DType::F32, n), 1e-5f, dy.view);
    expect_close(download(dx, x), x, 0, 0, "add_rms_norm: x");
    EXPECT_GE(expect_close(download(dy, y), y, 1e-30, 5e-7, "add_rms_norm: y"), 0.99);
  }
  Matrix a(2, 32, 0, 1), w(1, 32, 0, 2);
  DeviceTensor da = upload(a);
  gpu_->add_rms_norm(da.view, da.view, upload_vector(w.data.data(), DType::F32, 32), 1e-6f, da.view);
  EXPECT_FALSE(gpu_->take_error().ok()) << "y aliasing x is refused";
}

// As rms_norm; outputs add the bias last, so an output near zero may keep the rounding of
// the O(1) terms it cancels: an absolute 2e-6 (a few ulp of values below 16) besides.
TEST_F(CudaOpsTest, LayerNormMatchesCpu) {
  for (int64_t n : {64, 771, 2048}) {
    Matrix x(17, n, 2, 20 + static_cast<uint32_t>(n), 2.0f), y(17, n, 4);
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t c = 0; c < n; ++c) x.at(r, c) += 5.0f;  // a mean away from zero
    std::vector<float> w = testing::random_values(static_cast<size_t>(n), 21);
    std::vector<float> b = testing::random_values(static_cast<size_t>(n), 22);
    DeviceTensor dx = upload(x), dy = poisoned_like(y);
    const TensorView dw = upload_vector(w.data(), DType::F32, n), db = upload_vector(b.data(), DType::F32, n);
    cpu_->layer_norm(x.view(), make_view(w.data(), DType::F32, n), make_view(b.data(), DType::F32, n), 1e-5f,
                     y.view());
    gpu_->layer_norm(dx.view, dw, db, 1e-5f, dy.view);
    EXPECT_GE(expect_close(download(dy, y), y, 2e-6, 5e-7, "layer_norm"), 0.99);
    gpu_->layer_norm(dx.view, dw, db, 1e-5f, dx.view);  // in place
    expect_close(download(dx, x), y, 2e-6, 5e-7, "layer_norm in place");
  }
}

struct RopeCase {
  int32_t head_dim, n_dims;
  bool neox, freq_factors;
  float freq_base, freq_scale;
};

// The angles are the same float operations on both; only cosf / sinf differ (CUDA's
// within 2 ulp, glibc's within 1), by at most ~3 2^-24 each, which moves a rotated value
// by at most that times |x0| + |x1|, plus one rounding: 2^-21 (|x0| + |x1|) bounds it.
// The dimensions past n_dims are never touched: bit for bit.
TEST_F(CudaOpsTest, RopeMatchesCpu) {
  const RopeCase cases[] = {
      {128, 128, false, false, 10000.0f, 1.0f}, {128, 128, true, false, 1000000.0f, 1.0f},
      {64, 32, true, false, 10000.0f, 0.25f},   {128, 128, false, true, 500000.0f, 1.0f},
      {128, 64, false, false, 10000.0f, 0.5f},  {96, 96, true, true, 10000.0f, 1.0f},
  };
  constexpr int64_t kTokens = 41, kHeads = 6;
  for (const RopeCase& rc : cases) {
    Matrix x(kTokens, kHeads * rc.head_dim, 9, 30 + static_cast<uint32_t>(rc.n_dims), 2.0f);
    const Matrix original = x;
    std::vector<int32_t> positions(kTokens);
    for (int64_t t = 0; t < kTokens; ++t) positions[size_t(t)] = static_cast<int32_t>((t * 7919) % 32768);
    positions[0] = 0;
    positions[1] = 32767;
    std::vector<float> factors(size_t(rc.n_dims / 2));
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 7.0f * float(i) / float(factors.size());
    RopeParams cpu_params{rc.n_dims, rc.freq_base, rc.freq_scale, rc.neox,
                          rc.freq_factors ? factors.data() : nullptr};
    RopeParams gpu_params = cpu_params;
    if (rc.freq_factors) {
      gpu_params.freq_factors = static_cast<const float*>(
          upload_vector(factors.data(), DType::F32, int64_t(factors.size())).data);
    }
    DeviceTensor dx = upload(x);
    cpu_->rope(split_rows_into_heads(x.view(), rc.head_dim), positions, cpu_params);
    gpu_->rope(split_rows_into_heads(dx.view, rc.head_dim), positions, gpu_params);
    const Matrix back = download(dx, x);
    const int32_t half = rc.n_dims / 2;
    int failures = 0;
    for (int64_t t = 0; t < kTokens; ++t) {
      for (int64_t h = 0; h < kHeads; ++h) {
        const int64_t base = h * rc.head_dim;
        for (int32_t i = 0; i < half; ++i) {
          const int64_t a = base + (rc.neox ? i : 2 * i), b = base + (rc.neox ? i + half : 2 * i + 1);
          const double bound = std::ldexp(1.0, -21) * (std::fabs(original.at(t, a)) + std::fabs(original.at(t, b)));
          for (int64_t c : {a, b}) {
            if (!(std::fabs(back.at(t, c) - x.at(t, c)) <= bound) && failures++ < 5) {
              ADD_FAILURE() << "rope dims " << rc.n_dims << " neox " << rc.neox << ": token " << t << " col " << c
                            << ": gpu " << back.at(t, c) << " cpu " << x.at(t, c);
            }
          }
        }
        for (int64_t c = base + rc.n_dims; c < base + rc.head_dim; ++c) ASSERT_EQ(back.at(t, c), original.at(t, c));
      }
    }
    EXPECT_EQ(failures, 0);
  }
}

// q and k of a layer in one launch: the same angles and rotations as rope on each, bit for
// bit (RopeMatchesCpu checks those against the CPU), with another head count in k, the
// pair's neox layout and partial rotation.
TEST_F(CudaOpsTest, RopePairRotatesBothAsRopeDoes) {
  constexpr int64_t kTokens = 19, kHeadDim = 64;
  for (const bool neox : {false, true}) {
    Matrix q(kTokens, 8 * kHeadDim, 3, 50), k(kTokens, 2 * kHeadDim, 1, 51);
    std::vector<int32_t> positions(kTokens);
    for (int64_t t = 0; t < kTokens; ++t) positions[size_t(t)] = static_cast<int32_t>(3 + t * 101);
    const RopeParams params{.n_dims = 48, .freq_base = 10000.0f, .freq_scale = 1.0f, .neox = neox};
    DeviceTensor pair_q = upload(q), pair_k = upload(k), one_q = upload(q), one_k = upload(k);
    gpu_->rope_pair(split_rows_into_heads(pair_q.view, kHeadDim), split_rows_into_heads(pair_k.view, kHeadDim),
                    positions, params);
    gpu_->rope(split_rows_into_heads(one_q.view, kHeadDim), positions, params);
    gpu_->rope(split_rows_into_heads(one_k.view, kHeadDim), positions, params);
    expect_close(download(pair_q, q), download(one_q, q), 0, 0, "rope_pair: q");
    expect_close(download(pair_k, k), download(one_k, k), 0, 0, "rope_pair: k");
    EXPECT_NE(download(pair_q, q).data, q.data) << "rotated";
  }
}

// The CPU's exp is within 1.5 ulp (its reference polynomial) or 1 ulp (the C library's,
// for the last n % 16 values), CUDA's expf within 2: 1 + exp(-g) differs by at most ~4 ulp
// relative, and the division and product round once more each: 1e-6 relative (8 ulp).
TEST_F(CudaOpsTest, SiluMulMatchesCpu) {
  Matrix gate(13, 3001, 3, 40, 6.0f), up(13, 3001, 0, 41), out(13, 3001, 2);
  gate.at(0, 0) = -100.0f;  // exp overflows: silu is -0
  gate.at(0, 1) = 100.0f;
  DeviceTensor dg = upload(gate), du = upload(up), dout = poisoned_like(out);
  cpu_->silu_mul(gate.view(), up.view(), out.view());
  gpu_->silu_mul(dg.view, du.view, dout.view);
  expect_close(download(dout, out), out, 1e-30, 1e-6, "silu_mul");
}

// The CPU looks gelu up in a table of halves: its input rounded to f16 (a relative 2^-11,
// moving gelu by at most 1.13 |x| 2^-11, gelu' being within [-0.17, 1.13]) and its output
// rounded to f16 (2^-11 relative, or 2^-25 absolute below the normal halves). The GPU
// computes the same formula in f32 (a few ulp): |gpu - cpu| <= 2^-11 (1.2 |x| + |cpu|) +
// 2^-24. Outside (-10, 10) both give 0 or x exactly.
TEST_F(CudaOpsTest, GeluMatchesTheCpuTable) {
  Matrix x(7, 2000, 1, 50, 4.0f);
  const float specials[] = {-12.0f, -10.0f, -9.99f, -1e-8f, 0.0f, 1e-8f, 9.99f, 10.0f, 12.0f, 3e4f};
  for (size_t i = 0; i < std::size(specials); ++i) x.at(0, int64_t(i)) = specials[i];
  const Matrix input = x;
  DeviceTensor dx = upload(x);
  cpu_->gelu(x.view());
  gpu_->gelu(dx.view);
  const Matrix back = download(dx, x);
  int failures = 0;
  for (int64_t r = 0; r < x.rows; ++r) {
    for (int64_t c = 0; c < x.cols; ++c) {
      const double in = input.at(r, c), e = x.at(r, c), g = back.at(r, c);
      if (in <= -10.0 || in >= 10.0) {
        ASSERT_EQ(g, e) << "x = " << in;
        continue;
      }
      const double bound = std::ldexp(1.2 * std::fabs(in) + std::fabs(e), -11) + std::ldexp(1.0, -24);
      if (!(std::fabs(g - e) <= bound) && failures++ < 5) {
        ADD_FAILURE() << "gelu(" << in << "): gpu " << g << " cpu " << e;
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

// Views the ops cannot handle are errors from take_error(), never launched.
TEST_F(CudaOpsTest, BadViewsAreErrors) {
  Matrix a(4, 64, 0, 60), b(4, 32, 0, 61);
  DeviceTensor da = upload(a), db = upload(b);
  gpu_->add(da.view, db.view, da.view);
  EXPECT_FALSE(gpu_->take_error().ok());
  std::vector<float> w(32, 1.0f);
  gpu_->rms_norm(da.view, upload_vector(w.data(), DType::F32, 32), 1e-6f, da.view);
  EXPECT_FALSE(gpu_->take_error().ok());
  const std::vector<int32_t> positions(4, 1);
  gpu_->rope(split_rows_into_heads(da.view, 32), positions, RopeParams{.n_dims = 31});
  EXPECT_FALSE(gpu_->take_error().ok());
  gpu_->rope(split_rows_into_heads(da.view, 32), positions, RopeParams{.n_dims = 64});
  EXPECT_FALSE(gpu_->take_error().ok());
  const Matrix back = download(da, a);
  expect_close(back, a, 0, 0, "untouched after errors");
}

}  // namespace
}  // namespace pagoda::backend
