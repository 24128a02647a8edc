// The chunk kernels of the fast attention mode: each value depends only on its own row and
// position (not on how many rows or positions a call handles, nor on where a chain of
// positions is resumed), the portable and AVX2 kernels agree bit for bit, and
// softmax_exp is accurate to a few ulp.

#include "backend/cpu/attention/attention_chunk_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "test_util.h"

namespace pagoda::backend::cpu {
namespace {

// 11 rows: whole tiles and a narrower last one, for the 3-row and the 6-row kernels.
constexpr int32_t kRows = 11, kPositions = 37;

bool same_bits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

// kPositions K or V rows of head_dim values of `type` (F16 or F32), with row pointers
// padded to a multiple of 8 as the kernels expect.
struct Rows {
  std::vector<float> f32;
  std::vector<uint16_t> f16;
  std::vector<const void*> pointers;

  Rows(DType type, int32_t head_dim, uint32_t seed)
      : f32(testing::random_values(size_t(kPositions) * head_dim, seed)) {
    for (const float x : f32) f16.push_back(f32_to_fp16(x));
    for (int32_t p = 0; p < (kPositions + 7) / 8 * 8; ++p) {
      const size_t at = size_t(std::min(p, kPositions - 1)) * head_dim;
      pointers.push_back(type == DType::F16 ? static_cast<const void*>(f16.data() + at)
                                            : f32.data() + at);
    }
  }
  // Value i of row p as the kernels read it.
  float value(DType type, int32_t p, int32_t i, int32_t head_dim) const {
    const size_t at = size_t(p) * head_dim + i;
    return type == DType::F16 ? fp16_to_f32(f16[at]) : f32[at];
  }
};

struct Case {
  DType type;
  int32_t head_dim;
};

// Every distinct kernel set this CPU runs, the portable one first.
std::vector<const ChunkKernels*> kernel_sets() {
  std::vector<const ChunkKernels*> sets;
  for (const Isa isa : quant::available_isas()) {
    const ChunkKernels* k = &chunk_kernels(isa);
    if (std::find(sets.begin(), sets.end(), k) == sets.end()) sets.push_back(k);
  }
  return sets;
}

class ChunkKernelsTest : public ::testing::TestWithParam<Case> {};

TEST_P(ChunkKernelsTest, ScoresDoNotDependOnTheRowsAndPositionsOfACall) {
  const auto [type, d] = GetParam();
  const Rows keys(type, d, 1);
  const std::vector<float> q = testing::random_values(size_t(kRows) * d, 2);
  std::vector<float> first_set;
  for (const ChunkKernels* k : kernel_sets()) {
    std::vector<float> together(size_t(kRows) * kChunkPositions), alone(together.size());
    k->scores(q.data(), kRows, keys.pointers.data(), keys.pointers.data(), type, kPositions, d,
              0.125f, together.data());
    for (int32_t r = 0; r < kRows; ++r) {
      for (int32_t p = 0; p < kPositions; ++p) {
        const std::vector<const void*> one(8, keys.pointers[size_t(p)]);
        float out[8];
        k->scores(q.data() + size_t(r) * d, 1, one.data(), one.data(), type, 1, d, 0.125f, out);
        alone[size_t(r) * kChunkPositions + p] = out[0];
        double dot = 0;
        for (int32_t i = 0; i < d; ++i)
          dot += double(q[size_t(r) * d + i]) * keys.value(type, p, i, d);
        EXPECT_NEAR(out[0], 0.125 * dot, 1e-6 * d) << "row " << r << " position " << p;
      }
    }
    for (int32_t r = 0; r < kRows; ++r) {
      ASSERT_TRUE(same_bits(&together[size_t(r) * kChunkPositions],
                            &alone[size_t(r) * kChunkPositions], kPositions))
          << "row " << r;
    }
    if (first_set.empty()) {
      first_set = together;
    } else {
      for (int32_t r = 0; r < kRows; ++r) {
        EXPECT_TRUE(same_bits(&together[size_t(r) * kChunkPositions],
                              &first_set[size_t(r) * kChunkPositions], kPositions));
      }
    }
  }
}

TEST_P(ChunkKernelsTest, WeightedValuesResumeExactlyAndAgreeAcrossKernels) {
  const auto [type, d] = GetParam();
  const Rows values(type, d, 3);
  std::vector<float> w(size_t(kRows) * kChunkPositions);
  for (int32_t r = 0; r < kRows; ++r) {
    const std::vector<float> x = testing::random_values(kPositions, 10 + uint32_t(r));
    for (int32_t p = 0; p < kPositions; ++p)
      w[size_t(r) * kChunkPositions + p] = std::fabs(x[size_t(p)]);
  }
  std::vector<float> first_set;
  for (const ChunkKernels* k : kernel_sets()) {
    std::vector<float> together(size_t(kRows) * d, 0.0f), split(together.size(), 0.0f);
    k->accumulate_values(w.data(), kRows, values.pointers.data(), type, 0, kPositions, d,
                         together.data());
    for (int32_t r = 0; r < kRows; ++r) {  // one row at a time, the chain cut at position 13
      const float* w_row = w.data() + size_t(r) * kChunkPositions;
      k->accumulate_values(w_row, 1, values.pointers.data(), type, 0, 13, d,
                           split.data() + size_t(r) * d);
      k->accumulate_values(w_row, 1, values.pointers.data(), type, 13, kPositions, d,
                           split.data() + size_t(r) * d);
      for (int32_t i = 0; i < d; ++i) {  // the chain of FMAs over the positions, in order
        float expected = 0.0f;
        for (int32_t p = 0; p < kPositions; ++p) {
          expected = std::fma(w_row[p], values.value(type, p, i, d), expected);
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(together[size_t(r) * d + i]),
                  std::bit_cast<uint32_t>(expected))
            << r << " " << i;
      }
    }
    EXPECT_TRUE(same_bits(together.data(), split.data(), together.size()));
    if (first_set.empty()) first_set = together;
    EXPECT_TRUE(same_bits(together.data(), first_set.data(), together.size()));
  }
}

TEST_P(ChunkKernelsTest, SoftmaxAndMergeAgreeAcrossKernels) {
  const int32_t d = GetParam().head_dim;
  std::vector<float> first_rows;
  std::vector<ChunkSoftmax> first_states;
  for (const ChunkKernels* k : kernel_sets()) {
    std::vector<float> rows;
    std::vector<ChunkSoftmax> states;
    for (const int32_t count : {1, 7, 8, 13, kPositions, kChunkPositions}) {
      std::vector<float> row =
          testing::random_values(size_t(kChunkPositions), uint32_t(count), 3.0f);
      const std::vector<float> scores = row;
      const ChunkSoftmax s = k->softmax(row.data(), count);
      double max = -INFINITY, sum = 0;
      for (int32_t p = 0; p < count; ++p) max = std::max(max, double(scores[size_t(p)]));
      for (int32_t p = 0; p < count; ++p) {
        EXPECT_NEAR(row[size_t(p)], std::exp(scores[size_t(p)] - max), 4e-7);
        sum += std::exp(scores[size_t(p)] - max);
      }
      for (int32_t p = count; p < (count + 7) / 8 * 8; ++p)
        EXPECT_EQ(row[size_t(p)], 0.0f) << "padding after " << count;
      EXPECT_EQ(s.max, float(max));
      EXPECT_NEAR(s.sum, sum, 1e-6 * sum);
      rows.insert(rows.end(), row.begin(), row.begin() + count);
      states.push_back(s);
    }
    std::vector<float> acc = testing::random_values(size_t(d), 5);
    const std::vector<float> part = testing::random_values(size_t(d), 6);
    ChunkSoftmax state = {1.5f, 30.0f};
    k->merge(acc.data(), &state, part.data(), {2.25f, 12.0f}, d);
    rows.insert(rows.end(), acc.begin(), acc.end());
    states.push_back(state);
    EXPECT_EQ(state.max, 2.25f);
    EXPECT_NEAR(state.sum, 30.0 * std::exp(-0.75) + 12.0, 1e-5);
    if (first_rows.empty()) {
      first_rows = rows;
      first_states = states;
    }
    EXPECT_TRUE(same_bits(rows.data(), first_rows.data(), rows.size()));
    EXPECT_EQ(std::memcmp(states.data(), first_states.data(), states.size() * sizeof(ChunkSoftmax)),
              0);
  }
}

INSTANTIATE_TEST_SUITE_P(TypesAndHeadSizes, ChunkKernelsTest,
                         ::testing::Values(Case{DType::F16, 64}, Case{DType::F32, 64},
                                           Case{DType::F16, 20}, Case{DType::F32, 8},
                                           Case{DType::F32, 3}, Case{DType::F16, 128}),
                         [](const auto& info) {
                           return std::string(dtype_name(info.param.type)) + "_d" +
                                  std::to_string(info.param.head_dim);
                         });

TEST(ChunkKernels, DequantizeQ8_0IsBitExact) {
  constexpr int32_t n = 128;
  const std::vector<float> x = testing::random_values(n, 9, 4.0f);
  std::vector<std::byte> row(size_t(row_bytes(DType::Q8_0, n)));
  ASSERT_TRUE(quant::quantize_row(DType::Q8_0, x.data(), row.data(), n).ok());
  std::vector<float> expected(n);
  ASSERT_TRUE(quant::dequantize_row(DType::Q8_0, row.data(), expected.data(), n).ok());
  for (const ChunkKernels* k : kernel_sets()) {
    std::vector<float> got(n);
    k->dequantize_q8_0(row.data(), got.data(), n);
    EXPECT_TRUE(same_bits(got.data(), expected.data(), n));
  }
}

TEST(SoftmaxExp, WithinOneUlpOverTheRangeOfWeights) {
  int max_ulp = 0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -87.0f * float(i) / 200000.0f;
    const double expected = std::exp(double(x));
    const float got = softmax_exp(x);
    const double ulp = std::ldexp(1.0, std::ilogb(float(expected)) - 23);
    max_ulp = std::max(max_ulp, int(std::lround(std::fabs(got - expected) / ulp)));
  }
  EXPECT_LE(max_ulp, 1);  // rounded: under 1.5 ulp
  EXPECT_EQ(softmax_exp(0.0f), 1.0f);
  EXPECT_EQ(softmax_exp(-87.5f), 0.0f);
  EXPECT_EQ(softmax_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(softmax_exp(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace pagoda::backend::cpu
