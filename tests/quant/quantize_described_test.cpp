// quantize_described (quant/dot.h) of every ISA: the scalar activation quantizer's bytes,
// exactly, and scales and sums equal to what the written blocks hold. The AVX-512 form
// quantizes eight blocks at a time and hands the group to another path when one block is
// special, so the special blocks (zeros, a lone value, huge and tiny magnitudes, an
// overflowing 127 / amax, infinities, NaNs, rounding ties) are put at every place in a
// group and in a row's last, partial group.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot.h"

namespace pagoda::quant {
namespace {

constexpr int64_t kRowLengths[] = {32, 64, 96, 256, 288, 576, 1536, 32 * 19};

enum class Kind {
  kNormal,       // normal values of a random magnitude, 2^-40 .. 2^40
  kZeros,        // zeros and a negative zero
  kLoneValue,    // one nonzero value
  kHuge,         // around 1e30
  kLargest,      // +-FLT_MAX: d rounds to an infinite half
  kSubnormal,    // 127 / amax overflows
  kNearOverflow, // amax near 127 / FLT_MAX: 127 / amax just finite or just not
  kPlusInf,
  kMinusInf,
  kNaN,
  kTies,         // amax 127 and every other value k + 0.5: exact ties at scale 1
  kNegativeMax,  // the largest magnitude is negative
};
constexpr Kind kKinds[] = {Kind::kNormal,       Kind::kZeros,   Kind::kLoneValue, Kind::kHuge,
                           Kind::kLargest,      Kind::kSubnormal, Kind::kNearOverflow, Kind::kPlusInf,
                           Kind::kMinusInf,     Kind::kNaN,     Kind::kTies,      Kind::kNegativeMax};

void fill_block(Kind kind, std::mt19937& rng, float* block) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> position(0, kQK - 1);
  std::uniform_int_distribution<int> exponent(-40, 40);
  const float magnitude = std::ldexp(1.0f, exponent(rng));
  for (int i = 0; i < kQK; ++i) block[i] = normal(rng) * magnitude;
  switch (kind) {
    case Kind::kNormal: break;
    case Kind::kZeros:
      for (int i = 0; i < kQK; ++i) block[i] = 0.0f;
      block[position(rng)] = -0.0f;
      break;
    case Kind::kLoneValue: {
      const float value = block[0];
      for (int i = 0; i < kQK; ++i) block[i] = 0.0f;
      block[position(rng)] = value;
      break;
    }
    case Kind::kHuge:
      for (int i = 0; i < kQK; ++i) block[i] = normal(rng) * 1e30f;
      break;
    case Kind::kLargest:
      for (int i = 0; i < kQK; ++i) block[i] = (i % 3 == 0 ? -1.0f : 1.0f) * std::numeric_limits<float>::max();
      block[position(rng)] = normal(rng);
      break;
    case Kind::kSubnormal:
      for (int i = 0; i < kQK; ++i) block[i] = std::numeric_limits<float>::denorm_min() * static_cast<float>(i - 7);
      break;
    case Kind::kNearOverflow: {
      // 127 / FLT_MAX is about 3.73e-37: amax on either side of it.
      std::uniform_real_distribution<float> near(3.6e-37f, 3.9e-37f);
      for (int i = 0; i < kQK; ++i) block[i] = normal(rng) * 1e-38f;
      block[position(rng)] = near(rng);
      break;
    }
    case Kind::kPlusInf: block[position(rng)] = std::numeric_limits<float>::infinity(); break;
    case Kind::kMinusInf: block[position(rng)] = -std::numeric_limits<float>::infinity(); break;
    case Kind::kNaN: block[position(rng)] = std::numeric_limits<float>::quiet_NaN(); break;
    case Kind::kTies:
      for (int i = 0; i < kQK; ++i) block[i] = static_cast<float>(i - 16) + 0.5f;
      block[position(rng)] = 127.0f;
      break;
    case Kind::kNegativeMax: block[position(rng)] = -8.0f * magnitude; break;
  }
}

// A row of normal blocks (each of its own magnitude) with `kind` at block `at`.
std::vector<float> row_with(int64_t n, Kind kind, int64_t at, std::mt19937& rng) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / kQK; ++b) fill_block(b == at ? kind : Kind::kNormal, rng, x.data() + b * kQK);
  return x;
}

// A row whose every block is of a random kind.
std::vector<float> mixed_row(int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<size_t> pick(0, std::size(kKinds) - 1);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / kQK; ++b) fill_block(kKinds[pick(rng)], rng, x.data() + b * kQK);
  return x;
}

struct Format {
  DType weight;  // a weight type whose activations are in this format
  DType activation;
};
const Format kFormats[] = {{DType::Q8_0, DType::Q8_0}, {DType::Q4_1, DType::Q8_1}};
void PrintTo(const Format& format, std::ostream* os) { *os << dtype_name(format.activation); }

// Bytes past the end of every output: none may change.
constexpr size_t kGuard = 64;
constexpr uint8_t kFill = 0xa5;

// Runs `kernel`'s quantize_described on x and checks it against the scalar quantizer.
void expect_described(const DotKernel& kernel, QuantizeActivationsFn scalar, const std::vector<float>& x,
                      const std::string& where) {
  const int64_t n = static_cast<int64_t>(x.size());
  const size_t n_blocks = static_cast<size_t>(n / kQK);
  const bool q8_1 = kernel.activation == DType::Q8_1;
  const size_t block_bytes = q8_1 ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0);
  const size_t scales_per_block = q8_1 ? 2 : 1;
  const size_t bytes = block_bytes * n_blocks;

  std::vector<uint8_t> expected(bytes);
  scalar(x.data(), expected.data(), n);

  std::vector<uint8_t> got(bytes + kGuard, kFill);
  std::vector<float> scales(scales_per_block * n_blocks + kGuard, std::bit_cast<float>(0x7fa5a5a5u));
  std::vector<int32_t> sums(n_blocks + kGuard, 0x5a5a5a5a);
  kernel.quantize_described(x.data(), got.data(), n, scales.data(), sums.data());

  ASSERT_EQ(std::memcmp(got.data(), expected.data(), bytes), 0) << where << ": the bytes differ from the scalar quantizer's";
  for (size_t i = bytes; i < got.size(); ++i) ASSERT_EQ(got[i], kFill) << where << ": wrote past the blocks";
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = got.data() + b * block_bytes;
    uint16_t halves[2];
    std::memcpy(halves, block, sizeof(uint16_t) * scales_per_block);
    const auto* qs = reinterpret_cast<const int8_t*>(block + block_bytes - kQK);
    int32_t sum = 0;
    for (int i = 0; i < kQK; ++i) sum += qs[i];
    for (size_t k = 0; k < scales_per_block; ++k) {
      ASSERT_EQ(std::bit_cast<uint32_t>(scales[scales_per_block * b + k]), std::bit_cast<uint32_t>(fp16_to_f32(halves[k])))
          << where << ": block " << b << (k == 0 ? " d" : " s");
    }
    ASSERT_EQ(sums[b], sum) << where << ": block " << b;
  }
  for (size_t i = scales_per_block * n_blocks; i < scales.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(scales[i]), 0x7fa5a5a5u) << where << ": wrote past the scales";
  }
  for (size_t i = n_blocks; i < sums.size(); ++i) ASSERT_EQ(sums[i], 0x5a5a5a5a) << where << ": wrote past the sums";

  // Without scales, or sums, or both: the same bytes, and the same of what is asked for.
  std::vector<uint8_t> bare(bytes);
  std::vector<float> scales_alone(scales_per_block * n_blocks);
  std::vector<int32_t> sums_alone(n_blocks);
  kernel.quantize_described(x.data(), bare.data(), n, scales_alone.data(), nullptr);
  ASSERT_EQ(std::memcmp(bare.data(), expected.data(), bytes), 0) << where << ": the bytes differ without sums";
  ASSERT_EQ(std::memcmp(scales_alone.data(), scales.data(), sizeof(float) * scales_alone.size()), 0)
      << where << ": the scales differ without sums";
  kernel.quantize_described(x.data(), bare.data(), n, nullptr, sums_alone.data());
  ASSERT_EQ(std::memcmp(bare.data(), expected.data(), bytes), 0) << where << ": the bytes differ without scales";
  ASSERT_EQ(std::memcmp(sums_alone.data(), sums.data(), sizeof(int32_t) * sums_alone.size()), 0)
      << where << ": the sums differ without scales";
  kernel.quantize_described(x.data(), bare.data(), n, nullptr, nullptr);
  ASSERT_EQ(std::memcmp(bare.data(), expected.data(), bytes), 0) << where << ": the bytes differ without either";
}

class QuantizeDescribedTest : public ::testing::TestWithParam<Format> {
 protected:
  // Every ISA's kernel for the format, with the scalar quantizer to compare with.
  void for_each_isa(const std::vector<float>& x, const std::string& where) {
    const QuantizeActivationsFn scalar = find_dot_kernel(GetParam().weight, Isa::kScalar)->quantize;
    for (Isa isa : available_isas()) {
      const DotKernel* kernel = find_dot_kernel(GetParam().weight, isa);
      ASSERT_NE(kernel, nullptr);
      ASSERT_EQ(kernel->activation, GetParam().activation);
      ASSERT_NE(kernel->quantize_described, nullptr) << isa_name(isa);
      expect_described(*kernel, scalar, x, std::string(isa_name(isa)) + ", " + where);
      if (HasFatalFailure()) return;
    }
  }
};

TEST_P(QuantizeDescribedTest, NormalRowsGiveTheScalarBytes) {
  std::mt19937 rng(7u + static_cast<unsigned>(GetParam().weight));
  for (int64_t n : kRowLengths) {
    for (int round = 0; round < 20; ++round) {
      for_each_isa(row_with(n, Kind::kNormal, -1, rng), "n = " + std::to_string(n) + ", round " + std::to_string(round));
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(QuantizeDescribedTest, EverySpecialBlockAtEveryPlaceOfAGroup) {
  std::mt19937 rng(11u + static_cast<unsigned>(GetParam().weight));
  for (int64_t n : kRowLengths) {
    const int64_t n_blocks = n / kQK;
    for (Kind kind : kKinds) {
      // Each place in the first group, the start of the second, and the last three blocks
      // (in a partial group where n / 32 is not a multiple of 8).
      for (int64_t at = 0; at < n_blocks; ++at) {
        if (at > 8 && at < n_blocks - 3) continue;
        for_each_isa(row_with(n, kind, at, rng), "n = " + std::to_string(n) + ", kind " +
                                                     std::to_string(static_cast<int>(kind)) + " at block " +
                                                     std::to_string(at));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(QuantizeDescribedTest, MixedRowsGiveTheScalarBytes) {
  std::mt19937 rng(13u + static_cast<unsigned>(GetParam().weight));
  for (int64_t n : kRowLengths) {
    for (int round = 0; round < 20; ++round) {
      for_each_isa(mixed_row(n, rng), "n = " + std::to_string(n) + ", round " + std::to_string(round));
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ActivationFormats, QuantizeDescribedTest, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<Format>& info) {
                           return std::string(dtype_name(info.param.activation));
                         });

TEST(QuantizeDescribedDispatchTest, OnlyQ8_0AndQ8_1ActivationsHaveOne) {
  for (DType weight : {DType::F32, DType::F16, DType::BF16, DType::Q2_K, DType::Q4_K, DType::IQ4_XS}) {
    for (Isa isa : available_isas()) EXPECT_EQ(find_dot_kernel(weight, isa)->quantize_described, nullptr);
  }
  for (DType weight : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::IQ4_NL}) {
    for (Isa isa : available_isas()) EXPECT_NE(find_dot_kernel(weight, isa)->quantize_described, nullptr);
  }
}

TEST(QuantizeDescribedDispatchTest, AvxFiveTwelveHasItsOwn) {
  if (!isa_available(Isa::kAvx512)) GTEST_SKIP() << "this CPU does not run AVX-512";
  // Else the tests above would not run the grouped code.
  for (DType weight : {DType::Q8_0, DType::Q4_1}) {
    EXPECT_NE(find_dot_kernel(weight, Isa::kAvx512)->quantize_described,
              find_dot_kernel(weight, Isa::kAvx2)->quantize_described);
  }
}

}  // namespace
}  // namespace pagoda::quant
