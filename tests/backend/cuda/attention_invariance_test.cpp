// The CUDA attention is batch-invariant, bit for bit: every token's output is the same
// on every schedule of attention_schedules.h (one batch, each sequence alone, chunks of
// 1, 5, 16 and 64 tokens, staggered, reversed batch order, other block tables), on the
// kernel on tensor cores (f16 caches, head sizes that are multiples of 16) and on the
// scalar one (PAGODA_CUDA_ATTENTION=scalar, and f32, q8_0 caches or other head sizes),
// with and without prompt rows grouped in blocks (PAGODA_CUDA_ATTENTION_GROUPS=0); and
// that the default kernel is the one on tensor cores where it applies. The
// one-batch result is also checked against double precision, within 2e-5 times the
// largest |v|: the tensor-core kernel's split f16 operands keep the scalar kernel's
// accuracy.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/attention_schedules.h"
#include "cuda_test_util.h"

namespace pagoda::backend {
namespace {

using namespace attention_testing;

// Sets an environment variable for the lifetime of the object, then restores what was
// there (the backend reads its PAGODA_CUDA_* switches when it is made).
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    const char* before = getenv(name);
    had_value_ = before != nullptr;
    if (had_value_) before_ = before;
    setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (had_value_) {
      setenv(name_, before_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  bool had_value_ = false;
  std::string before_;
};

// A kernel choice: the environment switch that selects it (null: the default).
struct Variant {
  const char* name;
  const char* variable;
  const char* value;
};

const Variant kVariants[] = {
    {"default kernels", nullptr, nullptr},
    {"scalar kernel", "PAGODA_CUDA_ATTENTION", "scalar"},
    {"rows not grouped", "PAGODA_CUDA_ATTENTION_GROUPS", "0"},
};

std::vector<std::vector<float>> run(const Variant& variant, const Config& c, const std::vector<Prompt>& prompts,
                                    const Schedule& schedule) {
  std::unique_ptr<ScopedEnvironment> environment;
  if (variant.variable != nullptr) environment = std::make_unique<ScopedEnvironment>(variant.variable, variant.value);
  const std::unique_ptr<Backend> backend = cuda_testing::make_backend();
  if (backend == nullptr) return {};
  return attention_testing::run(*backend, c, prompts, schedule);
}

class CudaAttentionInvariance : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override { PAGODA_SKIP_WITHOUT_CUDA(); }
};

TEST_P(CudaAttentionInvariance, EveryScheduleGivesTheSameBits) {
  const Config c = GetParam();
  const std::vector<Prompt> prompts = make_prompts(c);
  const size_t out_width = size_t(c.n_heads()) * c.head_dim;
  const std::vector<std::pair<std::string, Schedule>> schedules = {
      {"each sequence alone", each_alone()},
      {"chunks of 1", chunked(1, 2)},
      {"chunks of 5", chunked(5, 2)},
      {"chunks of 16", chunked(16, 2)},
      {"chunks of 64", chunked(64, 2)},
      {"staggered, mixed chunk sizes", chunked({64, 5, 1, 16}, {0, 3, 10, 40}, 2)},
  };
  std::vector<std::vector<std::vector<float>>> baselines;
  for (const Variant& variant : kVariants) {
    const std::vector<std::vector<float>> baseline = run(variant, c, prompts, one_batch(2));
    ASSERT_EQ(baseline.size(), prompts.size()) << variant.name;
    check_against_double(c, prompts, baseline);
    baselines.push_back(baseline);
    for (const auto& [name, schedule] : schedules) {
      EXPECT_EQ(first_difference(baseline, run(variant, c, prompts, schedule), out_width), "")
          << variant.name << ", " << name;
    }
  }
  // The default kernel is the one on tensor cores where the cache and head size allow
  // it: its rounding differs from the scalar kernel's somewhere (the same bits
  // everywhere would mean it fell back to the scalar kernel).
  const bool tensor_cores = c.type == DType::F16 && c.head_dim % 16 == 0;
  EXPECT_EQ(first_difference(baselines[0], baselines[1], out_width) != "", tensor_cores)
      << "the default and the scalar kernel give " << (tensor_cores ? "the same bits" : "different bits");
}

// Head sizes 64 and 128 with 1, 3 and 4 query heads per KV head (4: the 1B Llama shape),
// 48 (padded to 64 on tensor cores) and 256 (the large-head instance), f16 caches; f32
// and q8_0 caches and a head of 20 values take the scalar kernel.
INSTANTIATE_TEST_SUITE_P(CacheTypesHeadSizesAndGroups, CudaAttentionInvariance,
                         ::testing::Values(Config{DType::F16, 64, 1}, Config{DType::F16, 64, 3},
                                           Config{DType::F16, 64, 4}, Config{DType::F16, 48, 3},
                                           Config{DType::F16, 128, 1}, Config{DType::F16, 128, 4},
                                           Config{DType::F16, 256, 8}, Config{DType::F32, 64, 3},
                                           Config{DType::F32, 20, 3}, Config{DType::Q8_0, 64, 4}),
                         [](const auto& info) {
                           return std::string(dtype_name(info.param.type)) + "_d" +
                                  std::to_string(info.param.head_dim) + "_gqa" + std::to_string(info.param.group);
                         });

}  // namespace
}  // namespace pagoda::backend
