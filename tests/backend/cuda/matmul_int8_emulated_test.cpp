// The integer products' kernel (matmul_int8_kernel.cuh) and the activations' quantizers
// (activations_q8_kernels.cuh), their own source run on the host by the SIMT emulation
// (simt_emulation.h), against the CPU's scalar dot products bit for bit: every format,
// one token (quantized inside the product's kernel) and several (quantized first by the
// quantizers' kernels, with the edge cases of integer_products_util.h), three weights in
// one launch with row counts that leave blocks part empty, and the fused SwiGLU. The
// cases of CudaIntegerProducts (matmul_int8_test.cpp), on smaller shapes: they check the
// kernels' logic, launch shapes included, where CI has no GPU; where a GPU is, that test
// runs the kernels themselves and this one skips.
// clang-format off
#include "simt_emulation.h"  // first: it takes over the CUDA qualifiers

#include "backend/cuda/activations_q8_kernels.cuh"
#include "backend/cuda/matmul_int8_kernel.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "cuda_test_util.h"
#include "integer_products_util.h"
#include "vec_targets_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

namespace kernel = cuda::weights::int8_kernel;
using cuda::ActivationFormat;
using cuda::QuantizedRows;

// Host arrays of activations quantized by the emulated quantizers.
struct HostActivations {
  std::vector<int8_t> q;
  std::vector<float> d, s;
  std::vector<int32_t> sums;
  QuantizedRows rows;
};

// x's first n tokens of n_in values, quantized to `format` as activations_q8.cu launches it.
void quantize(ActivationFormat format, const std::vector<float>& x, int64_t n_in, int64_t n,
              HostActivations& out) {
  namespace q8 = cuda::activation_kernels;
  out.q.assign(static_cast<size_t>(n_in * n), 0);
  out.d.assign(static_cast<size_t>(n_in / cuda::scale_values(format) * n), 0.0f);
  out.sums.assign(static_cast<size_t>(n_in / cuda::sum_values(format) * n), 0);
  out.s.assign(format == ActivationFormat::kQ8_1 ? static_cast<size_t>(n_in / 32 * n) : 0, 0.0f);
  out.rows = {out.q.data(),    out.d.data(), out.s.empty() ? nullptr : out.s.data(),
              out.sums.data(), n_in,         n};
  q8::Args a;
  a.x = reinterpret_cast<const char*>(x.data());
  a.x_row_bytes = n_in * static_cast<int64_t>(sizeof(float));
  a.out = out.rows;
  a.blocks_per_row = n_in / cuda::scale_values(format);
  a.n_blocks = a.blocks_per_row * n;
  const int64_t threads = format == ActivationFormat::kQ8_K ? 4 * a.n_blocks : a.n_blocks;
  for (int64_t block = 0; block * q8::kThreads < threads; ++block) {
    simt::run_block(q8::kThreads, static_cast<unsigned>(block), [&] {
      switch (format) {
        case ActivationFormat::kQ8_K:
          q8::quantize_q8k_kernel(a);
          break;
        case ActivationFormat::kQ8_0:
          q8::quantize_q8_32_kernel<false>(a);
          break;
        case ActivationFormat::kQ8_1:
          q8::quantize_q8_32_kernel<true>(a);
          break;
      }
    });
  }
}

// The weights as a launch's target: rows from item `first_item` on, outputs into y.
// The products of `targets` (y rows y_stride floats apart) with x's first n tokens, as
// matmul_vec_int8.cu runs them: every block of the launch, one after another.
void run_products(DType type, const cuda::weights::VecTargets& targets, const std::vector<float>& x,
                  int64_t n_in, int64_t n, int64_t y_stride, bool swiglu) {
  ASSERT_TRUE(cuda::int8_formats::visit_int8_format(type, [&](auto format) {
    using F = decltype(format);
    HostActivations activations;
    kernel::IntArgs a;
    if (n == 1) {
      a.x_f32 = x.data();
    } else {
      quantize(F::kActivations, x, n_in, n, activations);
      a.x = activations.rows;
    }
    a.targets = targets;
    a.n_blocks = static_cast<int>(n_in / F::kBlockValues);
    a.y_stride = y_stride;
    a.n_tokens = static_cast<int>(n);
    const kernel::LaunchShape shape =
        swiglu ? kernel::launch_shape<F, true>(a) : kernel::launch_shape<F, false>(a);
    for (int64_t block = 0; block < shape.blocks; ++block) {
      simt::run_block(
          shape.threads, static_cast<unsigned>(block),
          [&] {
            with_launched_instantiation(swiglu, n, [&](auto glu, auto tokens) {
              kernel::matmul_int8_kernel<F, decltype(glu)::value, decltype(tokens)::value>(a);
            });
          },
          shape.shared_bytes);
    }
  }));
}

class EmulatedIntegerProducts : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0)
      GTEST_SKIP() << "a GPU is here: CudaIntegerProducts runs the kernels themselves";
  }
};

TEST_P(EmulatedIntegerProducts, ProductsAreTheCpuScalarDotBitForBit) {
  struct Shape {
    int64_t n_in, n_out;
  };
  uint32_t seed = 900;
  const int64_t block = traits(GetParam()).block_size;
  // One block a row; a row of 2048 values (a whole warp of parts for the 32-value formats,
  // 32 parts of 8 blocks for the others); the longest row the kernel takes (several passes
  // of its threads over the parts).
  for (const Shape shape : {Shape{block, 3}, Shape{2048, 6}, Shape{kMaxBlocks * block, 2}}) {
    const HostWeights w = make_weights(GetParam(), shape.n_in, shape.n_out, ++seed);
    const std::vector<float> x = activations_with_edges(shape.n_in, 8, ++seed);
    for (const int64_t n : {1, 2, 5, 8}) {
      std::vector<float> y(static_cast<size_t>(shape.n_out * n), kPoison);
      const cuda::weights::VecTargets targets = targets_of({{&w, y.data()}});
      run_products(GetParam(), targets, x, shape.n_in, n, shape.n_out, false);
      EXPECT_EQ(first_difference(y, shape.n_out, cpu_products(w, x, n), shape.n_out, n), "")
          << dtype_name(GetParam()) << " [" << shape.n_out << "][" << shape.n_in << "], " << n
          << " tokens";
    }
  }
}

// Three weights in one launch (a layer's q, k and v), their outputs side by side in one
// buffer; row counts whose blocks of 4 rows straddle the targets.
TEST_P(EmulatedIntegerProducts, ThreeWeightsInOneLaunchAreEachProduct) {
  const int64_t n_in = 512, widths[] = {9, 3, 6}, offsets[] = {0, 9, 12}, width = 18;
  std::vector<HostWeights> hosts;
  for (int k = 0; k < 3; ++k)
    hosts.push_back(make_weights(GetParam(), n_in, widths[k], 910 + static_cast<uint32_t>(k)));
  const std::vector<float> x = activations_with_edges(n_in, 8, 920);
  for (const int64_t n : {1, 8}) {
    std::vector<float> y(static_cast<size_t>(width * n), kPoison);
    const cuda::weights::VecTargets targets = targets_of({{&hosts[0], y.data() + offsets[0]},
                                                          {&hosts[1], y.data() + offsets[1]},
                                                          {&hosts[2], y.data() + offsets[2]}});
    run_products(GetParam(), targets, x, n_in, n, width, false);
    for (int k = 0; k < 3; ++k) {
      const std::vector<float> part(y.begin() + offsets[k], y.end());
      EXPECT_EQ(first_difference(part, width, cpu_products(hosts[static_cast<size_t>(k)], x, n),
                                 widths[k], n),
                "")
          << dtype_name(GetParam()) << " target " << k << ", " << n << " tokens";
    }
  }
}

// One token through the fused SwiGLU: silu_times (the silu_mul op's operations) of the
// gate's and up's products, each the CPU's dot; an odd count of items.
TEST_P(EmulatedIntegerProducts, FusedSwiGluIsTheProductsThenSiluMul) {
  const int64_t n_in = 512, n_ff = 7;
  const HostWeights gate = make_weights(GetParam(), n_in, n_ff, 930),
                    up = make_weights(GetParam(), n_in, n_ff, 931);
  const std::vector<float> x = random_rows(n_in, 1, 932);
  std::vector<float> out(static_cast<size_t>(n_ff), kPoison);
  const cuda::weights::VecTargets targets = swiglu_targets_of(gate, up, out.data());
  run_products(GetParam(), targets, x, n_in, 1, n_ff, true);
  const std::vector<float> gate_y = cpu_products(gate, x, 1), up_y = cpu_products(up, x, 1);
  std::vector<float> want(static_cast<size_t>(n_ff));
  for (size_t j = 0; j < want.size(); ++j) want[j] = cuda::weights::silu_times(gate_y[j], up_y[j]);
  EXPECT_EQ(first_difference(out, n_ff, want, n_ff, 1), "") << dtype_name(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Formats, EmulatedIntegerProducts, ::testing::ValuesIn(kIntegerFormats),
                         type_test_name);

}  // namespace
}  // namespace pagoda::backend::cuda_testing
