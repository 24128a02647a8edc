// The few-token matmul kernels, their own source run on the host by the SIMT emulation
// (simt_emulation.h): the piece kernel (matmul_pieces_kernel.cuh, with the piece decoders
// of quant_pieces.cuh and quant_pieces_k.cuh) for every format it has decoders for, and
// the staged kernel (matmul_staged_kernel.cuh: tiles staged in shared memory, the formats'
// chunk decoders of quant_blocks.cuh, warps walking the rows grid-stride) for every weight
// format; against the product of the dequantized rows in double: rows of one to several
// rounds of the threads over the row (and rows of plain types that end in a part chunk),
// 1, 2, 5 and 8 tokens, three weights in one launch, and the fused SwiGLU. Each output
// within 1e-4 of the scale S of its terms (vec_targets_util.h): a value decoded wrong
// moves an output by about S / sqrt(n). It checks the kernels' logic where CI has no GPU;
// where a GPU is, CudaMatmulTest runs the kernels themselves and this test skips.
// clang-format off
#include "simt_emulation.h"  // first: it takes over the CUDA qualifiers

#include "backend/cuda/matmul_pieces_kernel.cuh"
#include "backend/cuda/matmul_staged_kernel.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "vec_targets_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

namespace pieces = cuda::weights::pieces_kernel;
namespace staged = cuda::weights::staged_kernel;

constexpr double kTolerance = 1e-4;  // of each output's scale S

enum class Kernel { kPieces, kStaged };

struct Case {
  Kernel kernel;
  DType type;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const DType type : kWeightTypes) {
    bool has_pieces = false;
    cuda::weights::visit_weight_format(type, [&](auto format) {
      has_pieces = cuda::WeightPiece<decltype(format)::value>::kSupported;
    });
    if (has_pieces) out.push_back({Kernel::kPieces, type});
    out.push_back({Kernel::kStaged, type});
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.kernel == Kernel::kPieces ? "pieces_" : "staged_") +
         std::string(dtype_name(info.param.type));
}

// The piece kernel over `targets` with x's first n tokens (rows n_in floats apart), as
// matmul_vec.cu launches it: every block, one after another.
template <DType T>
void run_pieces(const cuda::weights::VecTargets& targets, const std::vector<float>& x, int64_t n_in,
                int64_t n, int64_t y_stride, bool swiglu) {
  pieces::Args a;
  a.targets = targets;
  a.n_pieces = n_in / cuda::kPieceValues;
  a.x = x.data();
  a.x_stride = n_in;
  a.y_stride = y_stride;
  a.n_tokens = static_cast<int>(n);
  const int64_t items = swiglu ? pieces::kRows / 2 : pieces::kRows;
  simt::run_blocks(static_cast<unsigned>((targets.n_items + items - 1) / items), pieces::kThreads,
                   [&] {
                     with_launched_instantiation(swiglu, n, [&](auto glu, auto tokens) {
                       pieces::matmul_pieces_kernel<T, decltype(glu)::value, decltype(tokens)::value>(a);
                     });
                   });
}

// The staged kernel likewise, as matmul_vec_staged.cu launches it, on a grid of two
// blocks (fewer than the rows: its warps walk them grid-stride).
template <DType T>
void run_staged(const cuda::weights::VecTargets& targets, const std::vector<float>& x, int64_t n_in,
                int64_t n, int64_t y_stride, bool swiglu) {
  staged::Args a;
  a.targets = targets;
  a.row_bytes = row_bytes(T, n_in);
  a.n_in = n_in;
  a.n_chunks = (n_in + cuda::kChunkValues - 1) / cuda::kChunkValues;
  a.n_tiles =
      static_cast<int>((a.n_chunks + staged::Tiling<T>::kChunks - 1) / staged::Tiling<T>::kChunks);
  a.x = x.data();
  a.x_stride = n_in;
  a.y_stride = y_stride;
  a.n_tokens = static_cast<int>(n);
  a.x_aligned = reinterpret_cast<uintptr_t>(x.data()) % 16 == 0 && (n == 1 || n_in % 4 == 0);
  const int64_t wanted = (targets.n_items + staged::kWarpsPerBlock - 1) / staged::kWarpsPerBlock;
  simt::run_blocks(static_cast<unsigned>(std::min<int64_t>(wanted, 2)),
                   staged::kWarpsPerBlock * staged::kWarpSize, [&] {
                     with_launched_instantiation(swiglu, n, [&](auto glu, auto tokens) {
                       staged::matmul_vec_kernel<T, decltype(glu)::value, decltype(tokens)::value>(a);
                     });
                   });
}

// The case's kernel over `targets` (y rows y_stride floats apart) with x's first n tokens.
void run_vec(const Case& c, const cuda::weights::VecTargets& targets, const std::vector<float>& x,
             int64_t n_in, int64_t n, int64_t y_stride, bool swiglu) {
  ASSERT_TRUE(cuda::weights::visit_weight_format(c.type, [&](auto format) {
    constexpr DType T = decltype(format)::value;
    if (c.kernel == Kernel::kStaged) {
      run_staged<T>(targets, x, n_in, n, y_stride, swiglu);
    } else if constexpr (cuda::WeightPiece<T>::kSupported) {
      run_pieces<T>(targets, x, n_in, n, y_stride, swiglu);
    }
  }));
}

class EmulatedVecKernels : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0)
      GTEST_SKIP() << "a GPU is here: CudaMatmulTest runs the kernels themselves";
  }
};

TEST_P(EmulatedVecKernels, ProductsMatchTheDequantizedRows) {
  struct Shape {
    int64_t n_in, n_out;
  };
  uint32_t seed = 950;
  // One 256-value row (32 pieces: a block's first warp only); 2048 (two rounds of the
  // piece kernel's threads over the pieces); 5120 (five: the second piece in flight past
  // the end; several tiles of the staged kernel's); plain types, 200 (a part chunk).
  std::vector<Shape> shapes = {{256, 5}, {2048, 6}, {5120, 3}};
  if (is_plain_type(GetParam().type)) shapes.push_back({200, 5});
  for (const Shape shape : shapes) {
    const HostWeights w = make_weights(GetParam().type, shape.n_in, shape.n_out, ++seed);
    const std::vector<float> x = random_rows(shape.n_in, 8, ++seed);
    for (const int64_t n : {1, 2, 5, 8}) {
      std::vector<float> y(static_cast<size_t>(shape.n_out * n), kPoison);
      const cuda::weights::VecTargets targets = targets_of({{&w, y.data()}});
      run_vec(GetParam(), targets, x, shape.n_in, n, shape.n_out, false);
      EXPECT_EQ(first_outside(y, shape.n_out, w, x, n, kTolerance), "")
          << case_name({GetParam(), 0}) << " [" << shape.n_out << "][" << shape.n_in << "], " << n
          << " tokens";
    }
  }
}

// Three weights in one launch, outputs side by side; row counts whose blocks of 4 rows
// straddle the targets.
TEST_P(EmulatedVecKernels, ThreeWeightsInOneLaunchAreEachProduct) {
  const int64_t n_in = 512, widths[] = {9, 3, 6}, offsets[] = {0, 9, 12}, width = 18;
  std::vector<HostWeights> hosts;
  for (int k = 0; k < 3; ++k)
    hosts.push_back(make_weights(GetParam().type, n_in, widths[k], 960 + static_cast<uint32_t>(k)));
  const std::vector<float> x = random_rows(n_in, 8, 970);
  for (const int64_t n : {1, 8}) {
    std::vector<float> y(static_cast<size_t>(width * n), kPoison);
    const cuda::weights::VecTargets targets = targets_of({{&hosts[0], y.data() + offsets[0]},
                                                          {&hosts[1], y.data() + offsets[1]},
                                                          {&hosts[2], y.data() + offsets[2]}});
    run_vec(GetParam(), targets, x, n_in, n, width, false);
    for (int k = 0; k < 3; ++k) {
      const std::vector<float> part(y.begin() + offsets[k], y.end());
      EXPECT_EQ(first_outside(part, width, hosts[static_cast<size_t>(k)], x, n, kTolerance), "")
          << case_name({GetParam(), 0}) << " target " << k << ", " << n << " tokens";
    }
  }
}

// One token through the fused SwiGLU: silu_times of its gate and up sums, each within
// tolerance of the product (checked through their unfused runs, whose bits the fused
// form's sums are: the same pieces in the same order).
TEST_P(EmulatedVecKernels, FusedSwiGluIsTheProductsThenSiluMul) {
  const int64_t n_in = 512, n_ff = 7;
  const HostWeights gate = make_weights(GetParam().type, n_in, n_ff, 980),
                    up = make_weights(GetParam().type, n_in, n_ff, 981);
  const std::vector<float> x = random_rows(n_in, 1, 982);
  std::vector<float> fused(static_cast<size_t>(n_ff), kPoison), gate_y(fused), up_y(fused);
  const cuda::weights::VecTargets targets = swiglu_targets_of(gate, up, fused.data());
  run_vec(GetParam(), targets, x, n_in, 1, n_ff, true);
  for (auto [w, y] : {std::pair{&gate, &gate_y}, std::pair{&up, &up_y}}) {
    run_vec(GetParam(), targets_of({{w, y->data()}}), x, n_in, 1, n_ff, false);
    EXPECT_EQ(first_outside(*y, n_ff, *w, x, 1, kTolerance), "") << case_name({GetParam(), 0});
  }
  for (int64_t j = 0; j < n_ff; ++j) {
    const size_t i = static_cast<size_t>(j);
    EXPECT_EQ(fused[i], cuda::weights::silu_times(gate_y[i], up_y[i]))
        << case_name({GetParam(), 0}) << " item " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EmulatedVecKernels, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace pagoda::backend::cuda_testing
