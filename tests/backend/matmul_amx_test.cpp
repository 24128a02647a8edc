// The AMX strip kernels (Q4_K, Q5_K and Q6_K on the tile unit) give the same bits as the
// VNNI strip kernels for every token count (the single-token path, a part of a 16-token
// group, whole groups in pairs and alone, several passes over the activations), for
// partial strips and panels, and on extreme weights (every quant at 0 or its top, the
// largest scales and minimums, whose split into digits must stay exact: Q4_K's q x hi /
// q x lo, Q6_K's three signed digits of scales down to -128). So a machine with AMX
// decodes the same tokens as one without, and batch invariance holds across the kernels.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/matmul/matmul.h"
#include "core/fp16.h"
#include "matmul_compare.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "quant/blocks.h"
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

// Q6_K blocks written directly, so that every scale in [-128, 127] meets values at both
// ends of [0, 63]: each super-block of 16 rows x 16 groups holds all 256 scales once
// (shifted by the super-block), the values cycle through 0, 63 and others.
TEST(MatmulAmxQ6_KTest, EveryScaleGivesTheSameBitsAsVnniStrips) {
  if (!quant::isa_available(Isa::kAmx)) GTEST_SKIP() << "this CPU lacks amx (or PAGODA_MAX_ISA caps it)";
  const int64_t n_in = 1024, n_out = 32, n_blocks = n_in / quant::kQK_K;
  std::vector<quant::BlockQ6_K> blocks(size_t(n_out * n_blocks));
  for (int64_t r = 0; r < n_out; ++r) {
    for (int64_t b = 0; b < n_blocks; ++b) {
      quant::BlockQ6_K& block = blocks[size_t(r * n_blocks + b)];
      for (int i = 0; i < 128; ++i) block.ql[i] = uint8_t(i % 3 == 0 ? 0x00 : i % 3 == 1 ? 0xff : (i * 37 + r) & 0xff);
      for (int i = 0; i < 64; ++i) block.qh[i] = uint8_t(i % 2 == 0 ? 0x00 : i % 5 == 1 ? 0xff : (i * 91 + b) & 0xff);
      for (int g = 0; g < 16; ++g) block.scales[g] = int8_t((16 * (r % 16) + g + 64 * b) % 256 - 128);
      block.d = f32_to_fp16(0.001f * float(1 + r % 7));
    }
  }
  const TensorView w = make_view(blocks.data(), DType::Q6_K, n_in, n_out);
  for (const int64_t n_tokens : {int64_t{5}, int64_t{16}, int64_t{37}}) {
    Matrix extreme = extreme_activations(n_tokens, n_in);
    Matrix random(n_tokens, n_in, 3, 40 + uint32_t(n_tokens), 2.0f);
    for (Matrix* x : {&extreme, &random}) {
      expect_same_bits(run_matmul(Isa::kAmx, 2, w, *x, n_out), run_matmul(Isa::kAvx512Vnni, 2, w, *x, n_out),
                       "q6_K every scale, " + std::to_string(n_tokens) + " tokens");
    }
  }
}

// Tiles of 2 to 63 tokens run the AMX kernel or the VNNI strips (with their kept copy),
// whichever the matmul measures faster for the weight and count of tokens: the first
// calls try both in turn, and every call gives the bits of the VNNI strips alone, alone
// (run) or beside a weight of another k-quant (run_many, one choice for both).
TEST_P(MatmulAmxTest, TimedChoiceOfKernelKeepsTheBits) {
  const DType type = GetParam();
  ASSERT_NE(find_timed_alternative(type, Isa::kAmx), nullptr);
  EXPECT_EQ(find_timed_alternative(type, Isa::kAmx, CpuNumerics::kReference), nullptr);
  EXPECT_EQ(find_timed_alternative(type, Isa::kAvx512Vnni), nullptr);
  const int64_t n_in = 768, n_out = 40;
  std::vector<std::byte> bytes = quantized_rows(type, random_values(size_t(n_in * n_out), 5, 1.0f), n_out, n_in);
  std::vector<std::byte> q6_K = quantized_rows(DType::Q6_K, random_values(size_t(n_in * 24), 6, 1.0f), 24, n_in);
  const TensorView w = make_view(bytes.data(), type, n_in, n_out), w2 = make_view(q6_K.data(), DType::Q6_K, n_in, 24);
  ThreadPool pool(2);
  Matmul timed(Isa::kAmx, CpuNumerics::kFast, size_t{1} << 30);
  timed.add_weight(bytes.data(), bytes.size());
  timed.add_weight(q6_K.data(), q6_K.size());
  for (const int64_t n_tokens : {2, 3, 5, 9, 17, 40}) {
    Matrix x(n_tokens, n_in, 0, 30 + uint32_t(n_tokens), 2.0f);
    const Matrix expected = run_matmul(Isa::kAvx512Vnni, 2, w, x, n_out);
    const Matrix expected2 = run_matmul(Isa::kAvx512Vnni, 2, w2, x, 24);
    for (int call = 0; call < 3 * static_cast<int>(TimedChoice::kFirstSamples); ++call) {
      const std::string what = std::string(dtype_name(type)) + ", " + std::to_string(n_tokens) + " tokens, call " +
                               std::to_string(call);
      Matrix y(n_tokens, n_out, 0, 7), y2(n_tokens, 24, 0, 8);
      ASSERT_TRUE(timed.run(pool, w, x.view(), y.view()).ok());
      expect_same_bits(y, expected, what + " (run)");
      const MatmulTarget targets[] = {{w, y.view()}, {w2, y2.view()}};
      ASSERT_TRUE(timed.run_many(pool, x.view(), targets).ok());
      expect_same_bits(y, expected, what + " (run_many)");
      expect_same_bits(y2, expected2, what + " (run_many, q6_K)");
    }
  }
  // Only the VNNI strips keep copies: they ran.
  EXPECT_GT(timed.repacked_bytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(TileTypes, MatmulAmxTest, ::testing::Values(DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
