// The fast numerics mode's attention is batch-invariant and thread-count-invariant, bit
// for bit: every token's output is the same on every schedule of attention_schedules.h,
// on 1, 2 or 3 threads, or with the portable kernels instead of the AVX2 ones; the
// one-batch result is also checked against double precision. Head sizes 64, 48, 128
// and 20, 1 or 3 query heads per KV head, f16, f32 and q8_0 caches.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention_schedules.h"
#include "backend/cpu/cpu_backend.h"

namespace pagoda::backend {
namespace {

using namespace attention_testing;

std::vector<std::vector<float>> run(const Config& c, const std::vector<Prompt>& prompts, const Schedule& schedule) {
  auto backend = make_cpu_backend(
      {.n_threads = schedule.n_threads, .max_isa = schedule.isa, .numerics = CpuNumerics::kFast});
  return attention_testing::run(*backend, c, prompts, schedule);
}

class AttentionInvariance : public ::testing::TestWithParam<Config> {};

TEST_P(AttentionInvariance, EveryScheduleGivesTheSameBits) {
  const Config c = GetParam();
  const std::vector<Prompt> prompts = make_prompts(c);
  const size_t out_width = size_t(c.n_heads()) * c.head_dim;
  const std::vector<std::vector<float>> baseline = run(c, prompts, one_batch(2));
  check_against_double(c, prompts, baseline);

  const std::vector<std::pair<std::string, Schedule>> schedules = {
      {"one batch, 1 thread", one_batch(1)},
      {"one batch, 3 threads", one_batch(3)},
      {"each sequence alone", each_alone()},
      {"chunks of 1, 1 thread", chunked(1, 1)},
      {"chunks of 1, 3 threads", chunked(1, 3)},  // a lone long sequence is split by chunk
      {"chunks of 5", chunked(5, 2)},
      {"chunks of 16", chunked(16, 2)},
      {"chunks of 64, 3 threads", chunked(64, 3)},
      {"staggered, mixed chunk sizes", chunked({64, 5, 1, 16}, {0, 3, 10, 40}, 2)},
  };
  for (const auto& [name, schedule] : schedules) {
    EXPECT_EQ(first_difference(baseline, run(c, prompts, schedule), out_width), "") << name;
  }
}

// The portable kernels perform the AVX2 kernels' operations: same bits on any CPU.
TEST_P(AttentionInvariance, PortableKernelsGiveTheSameBits) {
  const Config c = GetParam();
  if (quant::best_isa() == Isa::kScalar) GTEST_SKIP() << "no SIMD kernels on this CPU";
  const std::vector<Prompt> prompts = make_prompts(c);
  Schedule portable = chunked({64, 5, 1, 16}, {0, 3, 10, 40}, 2);
  const std::vector<std::vector<float>> simd = run(c, prompts, portable);
  portable.isa = Isa::kScalar;
  EXPECT_EQ(first_difference(simd, run(c, prompts, portable), size_t(c.n_heads()) * c.head_dim),
            "");
}

INSTANTIATE_TEST_SUITE_P(CacheTypesHeadSizesAndGroups, AttentionInvariance,
                         ::testing::Values(Config{DType::F16, 64, 1}, Config{DType::F16, 64, 3},
                                           Config{DType::F16, 48, 1}, Config{DType::F16, 48, 3},
                                           Config{DType::F16, 128, 1}, Config{DType::F16, 128, 3},
                                           Config{DType::F32, 64, 3}, Config{DType::F32, 48, 1},
                                           Config{DType::F32, 20, 3}, Config{DType::Q8_0, 64, 3},
                                           Config{DType::Q8_0, 128, 1}),
                         [](const auto& info) {
                           return std::string(dtype_name(info.param.type)) + "_d" +
                                  std::to_string(info.param.head_dim) + "_gqa" +
                                  std::to_string(info.param.group);
                         });

}  // namespace
}  // namespace pagoda::backend
