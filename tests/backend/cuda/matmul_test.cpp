// CUDA matmul for every weight type, on a 1B Llama's shapes (2048 -> 2048, 2048 -> 5632,
// 5632 -> 2048) and small odd ones, for 1 to 600 tokens: against the exact product of x
// with the weights quant::dequantize_row gives, in f64.
//
// Tolerances. Each output is a dot product of n_in terms w_i x_i; its natural scale is
// S = sqrt(sum_i (w_i x_i)^2), the size of the rounding noise of any summation of those
// terms (and, unlike the output itself, never small by cancellation). We require
// |gpu - ref| <= tol * S with
// - f32 paths (the vector kernel, n <= 8; cuBLAS SGEMM for F32 and BF16 weights): the
//   dequantized weights and x are exact, only the f32 sums round: about 2^-24 per
//   addition, a random walk of at most 5632 steps on partial sums of size ~S, hence
//   ~2e-6 S at worst for a fully sequential order; tol = 1e-4 leaves 50 such sigmas.
// - the f16 path (block formats and F16, n > 8): the weights and x are rounded to f16,
//   a relative error of up to 2^-11 each per term, so the error is a sum of n_in random
//   terms of about 4e-4 |w_i x_i|: ~4e-4 S, up to ~2e-3 S over the millions of outputs
//   checked; tol = 5e-3.
// - the formats multiplied in integers on the few-token path (Q8_0, Q4_0, Q4_1, Q5_0,
//   Q5_1 and the k-quants): against x quantized to 8 bits per 32 or 256 values, as the
//   CPU quantizes it (matmul_int8_test.cpp checks those bits). x's rounding, up to d / 2
//   with d = max|x| / 127 (at most about 2.9 / 127 for 256 normal values), adds noise of
//   about d / sqrt(12) ||w|| = 6.6e-3 S; tol = 6e-2, nine of those.
// Any indexing mistake moves an output by about S itself.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

constexpr double kF32PathTolerance = 1e-4;
constexpr double kF16PathTolerance = 5e-3;
constexpr double kIntegerPathTolerance = 6e-2;
constexpr int64_t kVecMaxTokens = 8;  // matmul.cu: more tokens than this go to cuBLAS

// integers: whether the backend multiplies few tokens of these formats in integers
// (not with PAGODA_CUDA_MATVEC=staged).
double tolerance(DType type, int64_t n_tokens, bool integers = true) {
  if (n_tokens <= kVecMaxTokens && integers && multiplied_in_integers(type)) return kIntegerPathTolerance;
  const bool f32_path = n_tokens <= kVecMaxTokens || type == DType::F32 || type == DType::BF16;
  return f32_path ? kF32PathTolerance : kF16PathTolerance;
}

struct Shape {
  int64_t n_in, n_out;
};
constexpr Shape kLlamaShapes[] = {{2048, 2048}, {2048, 5632}, {5632, 2048}, {256, 3}, {512, 17}};
constexpr int64_t kTokenCounts[] = {1, 2, 5, 8, 9, 33, 600};
constexpr int64_t kMaxTokens = 600;
// Tokens compared with the reference: every token of the runs of up to 9, some of 33 and
// 600 (the f64 reference of all 600 would take minutes); every output is checked finite.
constexpr int64_t kCheckedTokens[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 13, 21, 32, 33, 150, 311, 470, 599};

// ref[k][j] and scale[k][j] for checked token k (x row kCheckedTokens[k]) and output j.
struct Reference {
  std::vector<std::vector<double>> ref, scale;
};

Reference reference(const HostWeights& w, const std::vector<float>& x, int64_t n_x_rows) {
  Reference r;
  for (const int64_t t : kCheckedTokens) {
    if (t >= n_x_rows) break;
    r.ref.emplace_back(static_cast<size_t>(w.n_out));
    r.scale.emplace_back(static_cast<size_t>(w.n_out));
  }
  parallel_for(w.n_out, [&](int64_t j) {
    const std::vector<float> row = w.dequantized_row(j);
    for (size_t k = 0; k < r.ref.size(); ++k) {
      const ExactDot d = exact_dot(row, x.data() + kCheckedTokens[k] * w.n_in);
      r.ref[k][static_cast<size_t>(j)] = d.value;
      r.scale[k][static_cast<size_t>(j)] = d.scale;
    }
  });
  return r;
}

// The device operands of one weight matrix: x [kMaxTokens][n_in] and y [kMaxTokens][n_out]
// (rows padded by x_pad, y_pad floats); a run of n tokens views their first n rows.
struct Operands {
  TensorView w;
  DeviceTensor x, y;
};

// Poisons y, runs matmul on the first n rows and checks: no error, every output written
// and finite, the checked tokens within tolerance, y's padding untouched.
void check_run(Backend& gpu, const HostWeights& host, Operands& ops, const Reference& r, int64_t n,
               bool integers) {
  fill(gpu, ops.y);
  TensorView x = ops.x.view, y = ops.y.view;
  x.ne[1] = y.ne[1] = n;
  gpu.matmul(ops.w, x, y);
  gpu.synchronize();
  const Status status = gpu.take_error();
  ASSERT_TRUE(status.ok()) << dtype_name(host.type) << " n=" << n << ": " << status.message();

  const std::vector<float> whole = download_whole(gpu, ops.y);
  const double tol = tolerance(host.type, n, integers);
  int64_t n_bad = 0;
  std::ostringstream first_bad;
  auto report = [&](int64_t t, int64_t j, double got, double want, double allowed) {
    if (n_bad++ == 0) first_bad << "y[" << t << "][" << j << "] = " << got << ", want " << want << " +- " << allowed;
  };
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t j = 0; j < ops.y.stride; ++j) {
      const float got = whole[static_cast<size_t>(t * ops.y.stride + j)];
      if (j >= host.n_out) {
        if (!std::isnan(got)) report(t, j, got, kPoison, 0.0);  // padding must stay untouched
      } else if (!std::isfinite(got)) {
        report(t, j, got, 0.0, 0.0);
      }
    }
  }
  for (size_t k = 0; k < r.ref.size() && kCheckedTokens[k] < n; ++k) {
    const int64_t t = kCheckedTokens[k];
    for (int64_t j = 0; j < host.n_out; ++j) {
      const double got = whole[static_cast<size_t>(t * ops.y.stride + j)];
      const double want = r.ref[k][static_cast<size_t>(j)];
      const double allowed = tol * r.scale[k][static_cast<size_t>(j)];
      if (!(std::fabs(got - want) <= allowed)) report(t, j, got, want, allowed);
    }
  }
  EXPECT_EQ(n_bad, 0) << dtype_name(host.type) << " [" << host.n_out << "][" << host.n_in << "], n=" << n
                      << ", tol " << tol << ": first mismatch " << first_bad.str();
}

// Uploads w and a [kMaxTokens][n_in] x (capped at max_tokens rows), then checks each
// token count.
void check_shape(Backend& gpu, DType type, Shape shape, std::span<const int64_t> counts, int64_t max_tokens,
                 int64_t x_pad, int64_t y_pad, uint32_t seed, bool integers = true) {
  HostWeights host = make_weights(type, shape.n_in, shape.n_out, seed);
  const std::vector<float> x = random_rows(shape.n_in, max_tokens, seed + 1);
  const Reference r = reference(host, x, max_tokens);
  Expected<TensorView> w = gpu.upload_weight(host.view());
  ASSERT_TRUE(w.ok()) << w.status().message();
  Operands ops{*w, upload(gpu, x, shape.n_in, max_tokens, x_pad), allocate(gpu, shape.n_out, max_tokens, y_pad)};
  ASSERT_NE(ops.x.buffer, nullptr);
  ASSERT_NE(ops.y.buffer, nullptr);
  for (const int64_t n : counts) {
    if (n <= max_tokens) check_run(gpu, host, ops, r, n, integers);
  }
}

class CudaMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(CudaMatmulTest, LlamaShapesMatchTheDequantizedProduct) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  uint32_t seed = 100;
  for (const Shape& shape : kLlamaShapes) check_shape(*gpu, GetParam(), shape, kTokenCounts, kMaxTokens, 0, 0, seed += 2);
}

// x rows 3 floats longer than n_in (no float4 loads, ldb != n_in) and y rows 5 longer
// (ldc != n_out, padding that must stay untouched), on both paths.
TEST_P(CudaMatmulTest, StridedRows) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const int64_t counts[] = {5, 33};
  check_shape(*gpu, GetParam(), {512, 17}, counts, 33, 3, 5, 200);
}

// Rows whose length is no multiple of 32 (plain types only): the partial last chunk.
TEST_P(CudaMatmulTest, RowsOfAnyLengthForPlainTypes) {
  PAGODA_SKIP_WITHOUT_CUDA();
  const DType type = GetParam();
  if (!is_plain_type(type)) GTEST_SKIP() << "block formats have whole blocks of 32 or 256 values";
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const int64_t counts[] = {1, 3, 9, 33};
  check_shape(*gpu, type, {100, 17}, counts, 33, 0, 0, 300);
  check_shape(*gpu, type, {100, 17}, counts, 33, 1, 2, 302);
}

// The staged few-token kernel takes the formats and rows the piece kernel does not; here
// (PAGODA_CUDA_MATVEC=staged, read when the backend is made) it takes rows the piece
// kernel would, so that both kernels are checked on every format.
TEST_P(CudaMatmulTest, StagedKernelMatchesTheDequantizedProduct) {
  PAGODA_SKIP_WITHOUT_CUDA();
  ASSERT_EQ(setenv("PAGODA_CUDA_MATVEC", "staged", 1), 0);
  std::unique_ptr<Backend> gpu = make_backend();
  unsetenv("PAGODA_CUDA_MATVEC");
  ASSERT_NE(gpu, nullptr);
  const int64_t counts[] = {1, 2, 8};
  check_shape(*gpu, GetParam(), {2048, 2048}, counts, 8, 0, 0, 400, /*integers=*/false);
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, CudaMatmulTest, ::testing::ValuesIn(kWeightTypes), type_test_name);

// A 1 MiB workspace: x in f16 (33 x 2048 halves) leaves room for about 220 rows of
// dequantized weights, so a 5632-row matrix goes through cuBLAS in many pieces.
TEST(CudaMatmul, SmallWorkspaceMultipliesInPieces) {
  PAGODA_SKIP_WITHOUT_CUDA();
  CudaBackendOptions options;
  options.workspace_bytes = size_t{1} << 20;
  std::unique_ptr<Backend> gpu = make_backend(options);
  ASSERT_NE(gpu, nullptr);
  const int64_t counts[] = {33};
  for (const DType type : {DType::Q4_K, DType::Q8_0, DType::BF16}) {
    check_shape(*gpu, type, {2048, 5632}, counts, 33, 0, 0, 400);
  }
}

// 600 tokens of 2048 values in f16 take 2.4 MB: more than a 1 MiB workspace holds.
TEST(CudaMatmul, WorkspaceTooSmallIsResourceExhausted) {
  PAGODA_SKIP_WITHOUT_CUDA();
  CudaBackendOptions options;
  options.workspace_bytes = size_t{1} << 20;
  std::unique_ptr<Backend> gpu = make_backend(options);
  ASSERT_NE(gpu, nullptr);
  HostWeights host = make_weights(DType::Q4_0, 2048, 64, 500);
  Expected<TensorView> w = gpu->upload_weight(host.view());
  ASSERT_TRUE(w.ok()) << w.status().message();
  DeviceTensor x = upload(*gpu, random_rows(2048, 600, 501), 2048, 600);
  DeviceTensor y = allocate(*gpu, 64, 600);
  gpu->matmul(*w, x.view, y.view);
  gpu->synchronize();
  const Status status = gpu->take_error();
  EXPECT_EQ(status.code(), ErrorCode::kResourceExhausted) << status.message();
}

TEST(CudaMatmul, MismatchedShapesAreAnError) {
  PAGODA_SKIP_WITHOUT_CUDA();
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  HostWeights host = make_weights(DType::Q8_0, 512, 17, 600);
  Expected<TensorView> w = gpu->upload_weight(host.view());
  ASSERT_TRUE(w.ok()) << w.status().message();
  DeviceTensor x = upload(*gpu, random_rows(256, 4, 601), 256, 4);
  DeviceTensor y = allocate(*gpu, 17, 4);
  gpu->matmul(*w, x.view, y.view);
  gpu->synchronize();
  EXPECT_FALSE(gpu->take_error().ok());
}

}  // namespace
}  // namespace pagoda::backend::cuda_testing
