// The few-token products of quantized weights in integers (matmul_vec_int8.cu) are the
// CPU's scalar dot products bit for bit: each output equals quant's scalar kernel on the
// weight row and the token's x quantized (Q8_0, Q8_1 or Q8_K, as the CPU pairs them) on
// the host. Every format the kernel takes; rows of 1 block to its limit of 384, 1 to 8
// tokens, alone and as a layer's q, k and v in one launch; x rows that are all zeros,
// whose largest magnitudes tie, that round halfway, or of tiny and large scale; the fused
// SwiGLU against the unfused products followed
// by silu_mul on the GPU. A wrong nibble, fifth bit, scale, sum or block order changes
// the bits.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "cuda_test_util.h"
#include "integer_products_util.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

class CudaIntegerProducts : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { PAGODA_SKIP_WITHOUT_CUDA(); }
};

TEST_P(CudaIntegerProducts, ProductsAreTheCpuScalarDotBitForBit) {
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  struct Shape {
    int64_t n_in, n_out;
  };
  uint32_t seed = 700;
  const int64_t block = traits(GetParam()).block_size;
  for (const Shape shape : {Shape{block, 3}, Shape{2048, 37}, Shape{8192, 19}, Shape{kMaxBlocks * block, 5}}) {
    HostWeights host = make_weights(GetParam(), shape.n_in, shape.n_out, ++seed);
    Expected<TensorView> w = gpu->upload_weight(host.view());
    ASSERT_TRUE(w.ok()) << w.status().message();
    const std::vector<float> x = activations_with_edges(shape.n_in, 8, ++seed);
    DeviceTensor dx = upload(*gpu, x, shape.n_in, 8), dy = allocate(*gpu, shape.n_out, 8, 3);
    for (const int64_t n : {1, 2, 5, 8}) {
      fill(*gpu, dy);
      TensorView xv = dx.view, yv = dy.view;
      xv.ne[1] = yv.ne[1] = n;
      gpu->matmul(*w, xv, yv);
      gpu->synchronize();
      const Status status = gpu->take_error();
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(first_difference(download_whole(*gpu, dy), dy.stride, cpu_products(host, x, n), shape.n_out, n), "")
          << dtype_name(GetParam()) << " [" << shape.n_out << "][" << shape.n_in << "], " << n << " tokens";
    }
  }
}

// q, k and v of a 1B layer in one launch, outputs side by side in one buffer.
TEST_P(CudaIntegerProducts, QkvInOneLaunchAreEachProduct) {
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const int64_t n_in = 2048, widths[] = {2048, 512, 512}, offsets[] = {0, 2048, 2560}, width = 3072;
  std::vector<HostWeights> hosts;
  std::vector<TensorView> ws;
  for (int k = 0; k < 3; ++k) {
    hosts.push_back(make_weights(GetParam(), n_in, widths[k], 800 + static_cast<uint32_t>(k)));
    Expected<TensorView> w = gpu->upload_weight(hosts.back().view());
    ASSERT_TRUE(w.ok()) << w.status().message();
    ws.push_back(*w);
  }
  const std::vector<float> x = activations_with_edges(n_in, 8, 810);
  DeviceTensor dx = upload(*gpu, x, n_in, 8), dy = allocate(*gpu, width, 8);
  for (const int64_t n : {1, 8}) {
    fill(*gpu, dy);
    TensorView xv = dx.view;
    xv.ne[1] = n;
    MatmulTarget targets[3];
    for (int k = 0; k < 3; ++k) {
      TensorView y = dy.view;
      y.data = static_cast<float*>(dy.view.data) + offsets[k];
      y.ne[0] = widths[k];
      y.ne[1] = n;
      targets[k] = {ws[static_cast<size_t>(k)], y};
    }
    gpu->matmuls(xv, targets);
    gpu->synchronize();
    ASSERT_TRUE(gpu->take_error().ok());
    const std::vector<float> whole = download_whole(*gpu, dy);
    for (int k = 0; k < 3; ++k) {
      const std::vector<float> part(whole.begin() + offsets[k], whole.end());
      EXPECT_EQ(first_difference(part, width, cpu_products(hosts[static_cast<size_t>(k)], x, n), widths[k], n), "")
          << dtype_name(GetParam()) << " target " << k << ", " << n << " tokens";
    }
  }
}

// One token through the fused SwiGLU: the bits of the two products (each the CPU's dot)
// followed by the silu_mul op.
TEST_P(CudaIntegerProducts, FusedSwiGluIsTheProductsThenSiluMul) {
  std::unique_ptr<Backend> gpu = make_backend();
  ASSERT_NE(gpu, nullptr);
  const int64_t n_in = 2048, n_ff = 8192;
  HostWeights host_gate = make_weights(GetParam(), n_in, n_ff, 820), host_up = make_weights(GetParam(), n_in, n_ff, 821);
  Expected<TensorView> w_gate = gpu->upload_weight(host_gate.view()), w_up = gpu->upload_weight(host_up.view());
  ASSERT_TRUE(w_gate.ok() && w_up.ok());
  const std::vector<float> x = random_rows(n_in, 1, 822);
  DeviceTensor dx = upload(*gpu, x, n_in, 1);
  DeviceTensor fused = allocate(*gpu, n_ff, 1), gate = allocate(*gpu, n_ff, 1), up = allocate(*gpu, n_ff, 1),
               unfused = allocate(*gpu, n_ff, 1);
  gpu->matmuls_swiglu(dx.view, *w_gate, *w_up, fused.view, up.view, fused.view);
  gpu->matmul(*w_gate, dx.view, gate.view);
  gpu->matmul(*w_up, dx.view, up.view);
  gpu->silu_mul(gate.view, up.view, unfused.view);
  gpu->synchronize();
  ASSERT_TRUE(gpu->take_error().ok());
  EXPECT_EQ(first_difference(download_whole(*gpu, gate), n_ff, cpu_products(host_gate, x, 1), n_ff, 1), "");
  const std::vector<float> want = download_whole(*gpu, unfused);
  EXPECT_EQ(first_difference(download_whole(*gpu, fused), n_ff, want, n_ff, 1), "") << dtype_name(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Formats, CudaIntegerProducts, ::testing::ValuesIn(kIntegerFormats), type_test_name);

}  // namespace
}  // namespace pagoda::backend::cuda_testing
