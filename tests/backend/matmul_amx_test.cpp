// The AMX strip kernels (Q4_K and Q5_K on the tile unit) give the same bits as the VNNI
// strip kernels for every token count (the single-token path, a part of a 16-token group,
// whole groups in pairs and alone, several passes over the activations), for partial
// strips and panels, and on extreme weights (every quant at 0 or its top, the largest scales and
// minimums, whose q x hi / q x lo split must stay exact). So a machine with AMX decodes
// the same tokens as one without, and batch invariance holds across the kernels.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "matmul_compare.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

using MatmulAmxTest = IsaKernelTest<Isa::kAmx>;

TEST_P(MatmulAmxTest, SameBitsAsVnniStrips) {
  const DType type = GetParam();
  const TileKernel* amx = find_tile_kernel(type, Isa::kAmx);
  ASSERT_NE(amx, find_tile_kernel(type, Isa::kAvx512Vnni)) << "not the AMX kernel";
  expect_same_bits_as(Isa::kAmx, Isa::kAvx512Vnni, type, {256, 768}, {1, 3, 4, 5, 13, 16, 17, 40, 150});
  // Two passes over the tokens: a pass holds up to 256 tokens.
  expect_same_bits_as(Isa::kAmx, Isa::kAvx512Vnni, type, {2048}, {300});
}

// Rows whose quants sit at 0 and the top of their range with the largest 6-bit scales and
// minimums (a block of one large value among small ones of the other sign), against
// activations of one sign or alternating at full scale.
TEST_P(MatmulAmxTest, SameBitsOnExtremeValues) {
  const DType type = GetParam();
  const int64_t n_in = 1024, n_out = 48, n_tokens = 20;
  std::vector<float> values(size_t(n_in * n_out));
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t row = i / n_in;
    const float spike = i % 32 == 0 ? 100.0f : 1.0f;
    values[i] = row % 3 == 0 ? spike : row % 3 == 1 ? -spike : (i % 2 ? spike : -1.0f);
  }
  std::vector<std::byte> bytes = quantized_rows(type, values, n_out, n_in);
  const TensorView w = make_view(bytes.data(), type, n_in, n_out);
  Matrix x = extreme_activations(n_tokens, n_in);
  expect_same_bits(run_matmul(Isa::kAmx, 2, w, x, n_out), run_matmul(Isa::kAvx512Vnni, 2, w, x, n_out),
                   std::string(dtype_name(type)) + " extremes");
}

INSTANTIATE_TEST_SUITE_P(TileTypes, MatmulAmxTest, ::testing::Values(DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
