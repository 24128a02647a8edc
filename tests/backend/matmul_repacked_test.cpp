// Weights kept repacked (backend/cpu/matmul/matmul_repacked.h) give the same bits as the
// kernels' own repacking, at every token count and thread count; only weights the matmul
// was told about are kept, and only within the budget.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/matmul/matmul.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "backend/cpu/matmul/timed_choice.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

using testing::Matrix;
using testing::random_values;

// The types whose VNNI kernel keeps copies (TileKernel::repack).
constexpr DType kKeptTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,  DType::Q5_1,  DType::IQ4_NL,
                                 DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};

struct Weight {
  int64_t n_in, n_out;
  std::vector<std::byte> bytes;
  TensorView view() { return make_view(bytes.data(), type, n_in, n_out); }
  DType type;
};

Weight make_weight(DType type, int64_t n_in, int64_t n_out) {
  Weight w{n_in, n_out, std::vector<std::byte>(size_t(row_bytes(type, n_in) * n_out)), type};
  const std::vector<float> values = random_values(size_t(n_in * n_out), 21, 0.5f);
  const size_t row = size_t(row_bytes(type, n_in));
  for (int64_t r = 0; r < n_out; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, &values[size_t(r * n_in)], w.bytes.data() + size_t(r) * row, n_in).ok());
  }
  return w;
}

Matrix multiply(Matmul& matmul, int threads, Weight& w, Matrix& x) {
  ThreadPool pool(threads);
  Matrix y(x.rows, w.n_out, 1);
  EXPECT_TRUE(matmul.run(pool, w.view(), x.view(), y.view()).ok());
  return y;
}

void expect_same_bits(const Matrix& a, const Matrix& b, const std::string& what) {
  for (int64_t t = 0; t < a.rows; ++t) {
    ASSERT_EQ(std::memcmp(&a.data[size_t(t * a.stride)], &b.data[size_t(t * b.stride)], size_t(a.cols) * sizeof(float)), 0)
        << what << ": token " << t;
  }
}

class MatmulRepackedTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!quant::isa_available(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU lacks AVX-512 VNNI";
    ASSERT_NE(find_tile_kernel(GetParam(), Isa::kAvx512Vnni)->repack, nullptr);
  }
};

TEST_P(MatmulRepackedTest, KeptStripsGiveTheSameBits) {
  const DType type = GetParam();
  // 301 rows: a partial strip and several repacking tasks of 256 rows; 576 inputs leave
  // blocks after the kernels' steps of 8 (768: an odd number of 256-value super-blocks).
  const int64_t odd_length = traits(type).block_size == 256 ? 768 : 576;
  for (const int64_t n_in : {odd_length, int64_t{1024}}) {
    Weight w = make_weight(type, n_in, 301);
    Matmul kept(Isa::kAvx512Vnni, CpuNumerics::kFast, size_t{1} << 30);
    kept.add_weight(w.bytes.data(), w.bytes.size());
    Matmul plain(Isa::kAvx512Vnni, CpuNumerics::kFast);
    for (const int64_t n_tokens : {1, 2, 3, 4, 5, 6, 16, 37, 150}) {
      Matrix x(n_tokens, n_in, 2, 30 + uint32_t(n_tokens), 2.0f);
      for (const int threads : {1, 2}) {
        const std::string what = std::string(dtype_name(type)) + ", " + std::to_string(n_in) + " inputs, " +
                                 std::to_string(n_tokens) + " tokens, " + std::to_string(threads) + " threads";
        expect_same_bits(multiply(kept, threads, w, x), multiply(plain, threads, w, x), what);
      }
    }
    // One copy, made by the first batched matmul and reused by the others.
    EXPECT_EQ(kept.repacked_bytes(), find_tile_kernel(type, Isa::kAvx512Vnni)->repack(
                                         TileJob{.n_in = n_in, .n_rows = 301}, nullptr));
    EXPECT_EQ(plain.repacked_bytes(), 0u);
  }
}

TEST_P(MatmulRepackedTest, OnlyWeightsAddedAndWithinTheBudget) {
  const DType type = GetParam();
  Weight w = make_weight(type, 1024, 64);
  Weight other = make_weight(type, 1024, 64);
  Matrix x(16, 1024, 0, 5, 1.0f);
  const size_t need = find_tile_kernel(type, Isa::kAvx512Vnni)->repack(TileJob{.n_in = 1024, .n_rows = 64}, nullptr);

  Matmul small(Isa::kAvx512Vnni, CpuNumerics::kFast, need - 1);
  small.add_weight(w.bytes.data(), w.bytes.size());
  const Matrix over_budget = multiply(small, 2, w, x);
  EXPECT_EQ(small.repacked_bytes(), 0u) << "the copy does not fit the budget";

  Matmul exact(Isa::kAvx512Vnni, CpuNumerics::kFast, need);
  exact.add_weight(w.bytes.data(), w.bytes.size());
  const Matrix unknown = multiply(exact, 2, other, x);
  EXPECT_EQ(exact.repacked_bytes(), 0u) << "a weight never added is not kept";
  const Matrix kept = multiply(exact, 2, w, x);
  EXPECT_EQ(exact.repacked_bytes(), need);
  multiply(exact, 2, other, x);
  EXPECT_EQ(exact.repacked_bytes(), need);

  Matmul plain(Isa::kAvx512Vnni, CpuNumerics::kFast);
  expect_same_bits(kept, multiply(plain, 2, w, x), "kept");
  expect_same_bits(over_budget, kept, "over budget");
  expect_same_bits(unknown, multiply(plain, 2, other, x), "unknown weight");
}

// Tiles of more tokens than TileKernel::kept_for_tokens_up_to repack into scratch: a
// prompt alone makes no copy, a batched decoding step does.
TEST_P(MatmulRepackedTest, KeptOnlyForTilesOfUpToTheirTokens) {
  const DType type = GetParam();
  const int64_t most = find_tile_kernel(type, Isa::kAvx512Vnni)->kept_for_tokens_up_to;
  if (most >= 512) GTEST_SKIP() << dtype_name(type) << "'s kept copy serves every tile";
  Weight w = make_weight(type, 1024, 64);
  Matmul matmul(Isa::kAvx512Vnni, CpuNumerics::kFast, size_t{1} << 30);
  matmul.add_weight(w.bytes.data(), w.bytes.size());
  Matrix prompt(most + 1, 1024, 0, 11, 1.0f);
  const Matrix before = multiply(matmul, 2, w, prompt);
  EXPECT_EQ(matmul.repacked_bytes(), 0u);
  Matrix step(most, 1024, 0, 12, 1.0f);
  multiply(matmul, 2, w, step);
  EXPECT_GT(matmul.repacked_bytes(), 0u);
  expect_same_bits(multiply(matmul, 2, w, prompt), before, "a prompt after the copy was made");
}

// Single tokens read a kept copy where the kernel's copies serve them always
// (kept_for_single_tokens_up_to) or where it is measured faster (the first calls try
// both ways: kept_for_single_tokens_when_faster); either way every call gives the bits
// of the rows as stored.
TEST_P(MatmulRepackedTest, SingleTokensGiveTheSameBitsWhicheverWayTheyRead) {
  const DType type = GetParam();
  const TileKernel* kernel = find_tile_kernel(type, Isa::kAvx512Vnni);
  Weight w = make_weight(type, 1024, 80);
  Matmul kept(Isa::kAvx512Vnni, CpuNumerics::kFast, size_t{1} << 30);
  kept.add_weight(w.bytes.data(), w.bytes.size());
  Matmul plain(Isa::kAvx512Vnni, CpuNumerics::kFast);
  Matrix x(1, 1024, 0, 17, 1.0f);
  const Matrix expected = multiply(plain, 2, w, x);
  for (int call = 0; call < 3 * static_cast<int>(TimedChoice::kFirstSamples); ++call) {
    expect_same_bits(multiply(kept, 1 + call % 2, w, x), expected, "call " + std::to_string(call));
  }
  const bool may_read_kept = kernel->kept_for_single_tokens_when_faster || 1024 <= kernel->kept_for_single_tokens_up_to;
  EXPECT_EQ(kept.repacked_bytes() > 0, may_read_kept) << dtype_name(type);
}

// A view of some rows of an added weight (as a model slices a fused tensor) is kept on
// its own; one reaching past the weight's bytes is not.
TEST_P(MatmulRepackedTest, RowsWithinAnAddedWeight) {
  const DType type = GetParam();
  Weight w = make_weight(type, 1024, 96);
  Matmul matmul(Isa::kAvx512Vnni, CpuNumerics::kFast, size_t{1} << 30);
  matmul.add_weight(w.bytes.data(), w.bytes.size() - 1);  // the last row is not all inside
  Matrix x(8, 1024, 0, 9, 1.0f);
  TensorView first_half = w.view();
  first_half.ne[1] = 48;
  Matrix y(8, 48);
  ThreadPool pool(2);
  ASSERT_TRUE(matmul.run(pool, first_half, x.view(), y.view()).ok());
  const size_t half = find_tile_kernel(type, Isa::kAvx512Vnni)->repack(TileJob{.n_in = 1024, .n_rows = 48}, nullptr);
  EXPECT_EQ(matmul.repacked_bytes(), half);
  multiply(matmul, 2, w, x);
  EXPECT_EQ(matmul.repacked_bytes(), half) << "the whole weight reaches past the bytes added";
}

INSTANTIATE_TEST_SUITE_P(KeptTypes, MatmulRepackedTest, ::testing::ValuesIn(kKeptTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace pagoda::backend::cpu
