// The few-token piece kernel (matmul_pieces_kernel.cuh, with the piece decoders of
// quant_pieces.cuh and quant_pieces_k.cuh), its own source run on the host by the SIMT
// emulation (simt_emulation.h), against the product of the dequantized rows in double:
// every format it has decoders for, rows of one to several rounds of its threads over the
// pieces, 1, 2, 5 and 8 tokens, three weights in one launch, and the fused SwiGLU. Each
// output within 1e-4 of the scale S of its terms (sqrt of the sum of their squares, which
// bounds any f32 summation of them): a value decoded wrong moves an output by about
// S / sqrt(n). It checks the kernel's logic where CI has no GPU; where a GPU is,
// CudaMatmulTest runs the kernel itself and this test skips.
// clang-format off
#include "simt_emulation.h"  // first: it takes over the CUDA qualifiers

#include "backend/cuda/matmul_pieces_kernel.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

namespace kernel = cuda::weights::pieces_kernel;

constexpr double kTolerance = 1e-4;  // of each output's scale S

constexpr DType kPieceFormats[] = {
    DType::F32,  DType::F16,    DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_0,  DType::Q4_1,
    DType::Q5_1, DType::IQ4_NL, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};

cuda::weights::VecTarget target_of(const HostWeights& w, float* y, int64_t first_item) {
  cuda::weights::VecTarget t;
  t.w = reinterpret_cast<const uint8_t*>(w.bytes.data());
  t.row_stride = static_cast<int64_t>(w.row_size());
  t.end = t.w + w.n_out * t.row_stride;
  t.y = y;
  t.first_item = first_item;
  return t;
}

// The kernel over `targets` with x's first n tokens (rows n_in floats apart), as
// matmul_vec.cu launches it: every block, one after another.
void run_pieces(DType type, const cuda::weights::VecTargets& targets, const std::vector<float>& x,
                int64_t n_in, int64_t n, int64_t y_stride, bool swiglu) {
  ASSERT_TRUE(cuda::weights::visit_weight_format(type, [&](auto format) {
    constexpr DType T = decltype(format)::value;
    if constexpr (cuda::WeightPiece<T>::kSupported) {
      kernel::Args a;
      a.targets = targets;
      a.n_pieces = n_in / cuda::kPieceValues;
      a.x = x.data();
      a.x_stride = n_in;
      a.y_stride = y_stride;
      a.n_tokens = static_cast<int>(n);
      const int64_t items = swiglu ? kernel::kRows / 2 : kernel::kRows;
      for (int64_t block = 0; block * items < targets.n_items; ++block) {
        simt::run_block(kernel::kThreads, static_cast<unsigned>(block), [&] {
          if (swiglu) {
            kernel::matmul_pieces_kernel<T, true, 1>(a);
          } else if (n == 1) {
            kernel::matmul_pieces_kernel<T, false, 1>(a);
          } else {
            kernel::matmul_pieces_kernel<T, false, cuda::weights::kVecMaxTokens>(a);
          }
        });
      }
    } else {
      ADD_FAILURE() << dtype_name(type) << " has no piece decoder";
    }
  }));
}

// The first output (rows y_stride floats apart) farther than kTolerance x S from w's
// dequantized rows times x in double ("" when none).
std::string first_outside(const std::vector<float>& y, int64_t y_stride, const HostWeights& w,
                          const std::vector<float>& x, int64_t n) {
  for (int64_t j = 0; j < w.n_out; ++j) {
    const std::vector<float> row = w.dequantized_row(j);
    for (int64_t t = 0; t < n; ++t) {
      const ExactDot want = exact_dot(row, x.data() + t * w.n_in);
      const float got = y[static_cast<size_t>(t * y_stride + j)];
      if (!(std::abs(got - want.value) <= kTolerance * want.scale)) {
        return "y[" + std::to_string(t) + "][" + std::to_string(j) + "] = " + std::to_string(got) +
               ", want " + std::to_string(want.value) + " (S " + std::to_string(want.scale) + ")";
      }
    }
  }
  return "";
}

class EmulatedPieceKernel : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0)
      GTEST_SKIP() << "a GPU is here: CudaMatmulTest runs the kernel itself";
  }
};

TEST_P(EmulatedPieceKernel, ProductsMatchTheDequantizedRows) {
  struct Shape {
    int64_t n_in, n_out;
  };
  uint32_t seed = 950;
  // One 256-value row (32 pieces: a block's first warp only); 2048 (two rounds of the
  // block's threads over the pieces); 5120 (five: the second piece in flight past the end).
  for (const Shape shape : {Shape{256, 5}, Shape{2048, 6}, Shape{5120, 3}}) {
    const HostWeights w = make_weights(GetParam(), shape.n_in, shape.n_out, ++seed);
    const std::vector<float> x = random_rows(shape.n_in, 8, ++seed);
    for (const int64_t n : {1, 2, 5, 8}) {
      std::vector<float> y(static_cast<size_t>(shape.n_out * n), kPoison);
      cuda::weights::VecTargets targets;
      targets.t0 = target_of(w, y.data(), 0);
      targets.n_targets = 1;
      targets.n_items = shape.n_out;
      run_pieces(GetParam(), targets, x, shape.n_in, n, shape.n_out, false);
      EXPECT_EQ(first_outside(y, shape.n_out, w, x, n), "")
          << dtype_name(GetParam()) << " [" << shape.n_out << "][" << shape.n_in << "], " << n
          << " tokens";
    }
  }
}

// Three weights in one launch, outputs side by side; row counts whose blocks of 4 rows
// straddle the targets.
TEST_P(EmulatedPieceKernel, ThreeWeightsInOneLaunchAreEachProduct) {
  const int64_t n_in = 512, widths[] = {9, 3, 6}, offsets[] = {0, 9, 12}, width = 18;
  std::vector<HostWeights> hosts;
  for (int k = 0; k < 3; ++k)
    hosts.push_back(make_weights(GetParam(), n_in, widths[k], 960 + static_cast<uint32_t>(k)));
  const std::vector<float> x = random_rows(n_in, 8, 970);
  for (const int64_t n : {1, 8}) {
    std::vector<float> y(static_cast<size_t>(width * n), kPoison);
    cuda::weights::VecTargets targets;
    cuda::weights::VecTarget* slots[] = {&targets.t0, &targets.t1, &targets.t2};
    for (int k = 0; k < 3; ++k) {
      *slots[k] = target_of(hosts[static_cast<size_t>(k)], y.data() + offsets[k], offsets[k]);
    }
    targets.n_targets = 3;
    targets.n_items = width;
    run_pieces(GetParam(), targets, x, n_in, n, width, false);
    for (int k = 0; k < 3; ++k) {
      const std::vector<float> part(y.begin() + offsets[k], y.end());
      EXPECT_EQ(first_outside(part, width, hosts[static_cast<size_t>(k)], x, n), "")
          << dtype_name(GetParam()) << " target " << k << ", " << n << " tokens";
    }
  }
}

// One token through the fused SwiGLU: silu_times of its gate and up sums, each within
// tolerance of the product (checked through their unfused runs, whose bits the fused
// form's sums are: the same pieces in the same order).
TEST_P(EmulatedPieceKernel, FusedSwiGluIsTheProductsThenSiluMul) {
  const int64_t n_in = 512, n_ff = 7;
  const HostWeights gate = make_weights(GetParam(), n_in, n_ff, 980),
                    up = make_weights(GetParam(), n_in, n_ff, 981);
  const std::vector<float> x = random_rows(n_in, 1, 982);
  std::vector<float> fused(static_cast<size_t>(n_ff), kPoison), gate_y(fused), up_y(fused);
  cuda::weights::VecTargets targets;
  targets.t0 = target_of(gate, fused.data(), 0);
  targets.t1 = target_of(up, fused.data(), 0);
  targets.n_targets = 2;
  targets.n_items = n_ff;
  run_pieces(GetParam(), targets, x, n_in, 1, n_ff, true);
  for (auto [w, y] : {std::pair{&gate, &gate_y}, std::pair{&up, &up_y}}) {
    cuda::weights::VecTargets one;
    one.t0 = target_of(*w, y->data(), 0);
    one.n_targets = 1;
    one.n_items = n_ff;
    run_pieces(GetParam(), one, x, n_in, 1, n_ff, false);
    EXPECT_EQ(first_outside(*y, n_ff, *w, x, 1), "") << dtype_name(GetParam());
  }
  for (int64_t j = 0; j < n_ff; ++j) {
    const size_t i = static_cast<size_t>(j);
    EXPECT_EQ(fused[i], cuda::weights::silu_times(gate_y[i], up_y[i]))
        << dtype_name(GetParam()) << " item " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EmulatedPieceKernel, ::testing::ValuesIn(kPieceFormats),
                         type_test_name);

}  // namespace
}  // namespace pagoda::backend::cuda_testing
