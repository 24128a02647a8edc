// The CUDA backend's paged attention against the CPU backend's (kFast) on the same random
// inputs and the same prior cache contents: f16, f32 and q8_0 caches, head sizes 64, 96,
// 128 and 256, grouped-query ratios 32/8, 9/3, 16/1 and 6/6, batches mixing decodes,
// chunked prefills and a 600-token prompt, block tables with holes and a prefix shared by
// two sequences, contexts up to 32k positions. After each step the layer's whole K and V
// arrays must be byte-identical on both backends (the new rows written, converted alike;
// nothing else touched), and every output within a stated tolerance.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/test_util.h"
#include "core/fp16.h"
#include "cuda_test_util.h"
#include "quant/quantize.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

constexpr int32_t kBlockSize = 16;
constexpr float kFillMax = 2.0f;  // prior cache values are uniform in [-kFillMax, kFillMax]

struct Config {
  DType type;
  int32_t head_dim, n_heads, n_kv_heads;
};

std::string name_of(const Config& c) {
  return std::string(dtype_name(c.type)) + "_d" + std::to_string(c.head_dim) + "_h" + std::to_string(c.n_heads) +
         "_kv" + std::to_string(c.n_kv_heads);
}

// One sequence: its block table, the tokens already in the cache, the new tokens of the
// step about to run.
struct Sequence {
  std::vector<int32_t> blocks;
  int32_t n_cached = 0;
  int32_t n_new = 0;
};

// Both backends with a KV cache each, filled alike, stepping the same batches.
class Harness {
 public:
  Harness(const Config& config, int32_t n_blocks, int32_t n_layers, int32_t layer)
      : config_(config), layer_(layer) {
    gpu_ = cuda_testing::make_backend();
    if (gpu_ == nullptr) return;
    cpu_ = make_cpu_backend({.n_threads = 2, .numerics = CpuNumerics::kFast});
    const KvCacheShape shape{.n_layers = n_layers, .n_kv_heads = config.n_kv_heads, .head_dim = config.head_dim,
                             .block_size = kBlockSize, .n_blocks = n_blocks, .type = config.type};
    Expected<std::unique_ptr<KvStorage>> cpu_kv = cpu_->allocate_kv(shape), gpu_kv = gpu_->allocate_kv(shape);
    EXPECT_TRUE(cpu_kv.ok() && gpu_kv.ok());
    if (!cpu_kv.ok() || !gpu_kv.ok()) return;
    cpu_kv_ = std::move(cpu_kv).value();
    gpu_kv_ = std::move(gpu_kv).value();
    free_blocks_.resize(static_cast<size_t>(n_blocks));
    std::iota(free_blocks_.begin(), free_blocks_.end(), 0);
    std::shuffle(free_blocks_.begin(), free_blocks_.end(), std::mt19937(7));  // scattered, with holes
    fill_cache(1);
    fill_cache(2);
  }
  bool ready() const { return gpu_kv_ != nullptr; }

  std::vector<int32_t> take_blocks(int32_t n) {
    std::vector<int32_t> blocks;
    for (int32_t i = 0; i < n && !free_blocks_.empty(); ++i) {
      blocks.push_back(free_blocks_.back());
      free_blocks_.pop_back();
    }
    EXPECT_EQ(static_cast<int32_t>(blocks.size()), n) << "the test asks for more blocks than the cache has";
    return blocks;
  }

  // Runs one step of the sequences with n_new > 0 on both backends and checks it: outputs
  // within tolerance * max|v| of the CPU's, the layer's K and V byte-identical. Then the
  // new tokens count as cached.
  void step(std::vector<Sequence*> sequences, uint32_t seed, double tolerance);

 private:
  // Every row of the layer's K (part 1) or V (part 2) array: the same random values in the
  // cache type on both backends.
  void fill_cache(int part);
  std::vector<std::byte> download_cache(Backend& backend, KvStorage& kv, int part);
  void compare_caches();

  Config config_;
  int32_t layer_;
  std::unique_ptr<Backend> gpu_, cpu_;
  std::unique_ptr<KvStorage> cpu_kv_, gpu_kv_;
  std::vector<int32_t> free_blocks_;
};

void Harness::fill_cache(int part) {
  const TensorView cpu_view = part == 1 ? cpu_kv_->keys(layer_) : cpu_kv_->values(layer_);
  const TensorView gpu_view = part == 1 ? gpu_kv_->keys(layer_) : gpu_kv_->values(layer_);
  const int64_t row_values = cpu_view.ne[0], rows = cpu_view.ne[1];
  const size_t row_bytes = cpu_view.row_bytes();
  std::vector<std::byte> bytes(row_bytes * static_cast<size_t>(rows));
  std::mt19937 rng(100 + static_cast<uint32_t>(part));
  std::uniform_real_distribution<float> dist(-kFillMax, kFillMax);
  std::vector<float> row(static_cast<size_t>(row_values));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& x : row) x = dist(rng);
    std::byte* dst = bytes.data() + static_cast<size_t>(r) * row_bytes;
    if (config_.type == DType::F32) {
      std::memcpy(dst, row.data(), row_bytes);
    } else if (config_.type == DType::F16) {
      for (int64_t i = 0; i < row_values; ++i) {
        const uint16_t h = f32_to_fp16(row[static_cast<size_t>(i)]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      quant::quantize_row_q8_0(row.data(), dst, row_values);
    }
  }
  cpu_->copy_from_host(bytes.data(), cpu_view);
  gpu_->copy_from_host(bytes.data(), gpu_view);
}

std::vector<std::byte> Harness::download_cache(Backend& backend, KvStorage& kv, int part) {
  const TensorView view = part == 1 ? kv.keys(layer_) : kv.values(layer_);
  std::vector<std::byte> bytes(view.row_bytes() * static_cast<size_t>(view.n_rows()));
  backend.copy_to_host(view, bytes.data());
  backend.synchronize();
  return bytes;
}

void Harness::compare_caches() {
  for (int part : {1, 2}) {
    const std::vector<std::byte> cpu = download_cache(*cpu_, *cpu_kv_, part);
    const std::vector<std::byte> gpu = download_cache(*gpu_, *gpu_kv_, part);
    ASSERT_EQ(cpu.size(), gpu.size());
    if (std::memcmp(cpu.data(), gpu.data(), cpu.size()) == 0) continue;
    const size_t slot_bytes = cpu_kv_->keys(layer_).row_bytes();
    size_t first = 0;
    while (cpu[first] == gpu[first]) ++first;
    ADD_FAILURE() << (part == 1 ? "K" : "V") << " cache differs first in slot " << first / slot_bytes << " byte "
                  << first % slot_bytes;
  }
}

// The new K and V rows of every sequence are in columns of one fused QKV matrix, as a
// model's projection leaves them (strided head views). q is scaled by 2 / sqrt(head_dim)
// so that the softmax is far from uniform.
void Harness::step(std::vector<Sequence*> sequences, uint32_t seed, double tolerance) {
  ASSERT_TRUE(ready());
  const int64_t hd = config_.head_dim, nh = config_.n_heads, nkv = config_.n_kv_heads;
  std::vector<SequenceAttention> batch_sequences;
  std::vector<int64_t> slots;
  int32_t n = 0;
  for (Sequence* s : sequences) {
    if (s->n_new == 0) continue;
    const int32_t n_context = s->n_cached + s->n_new;
    ASSERT_GE(static_cast<int64_t>(s->blocks.size()) * kBlockSize, n_context);
    for (int32_t p = s->n_cached; p < n_context; ++p) {
      slots.push_back(int64_t{s->blocks[size_t(p / kBlockSize)]} * kBlockSize + p % kBlockSize);
    }
    batch_sequences.push_back({n, s->n_new, n_context, s->blocks});
    n += s->n_new;
  }
  const AttentionBatch batch{batch_sequences, slots, kBlockSize};
  const float scale = 2.0f / std::sqrt(static_cast<float>(hd));

  Matrix qkv(n, (nh + 2 * nkv) * hd, 8, seed);
  Matrix out(n, nh * hd, 4);
  for (float& x : out.data) x = std::numeric_limits<float>::quiet_NaN();
  auto views = [&](const TensorView& all, TensorView* q, TensorView* k, TensorView* v) {
    *q = split_rows_into_heads(column_slice(all, 0, nh * hd), hd);
    *k = split_rows_into_heads(column_slice(all, nh * hd, nkv * hd), hd);
    *v = split_rows_into_heads(column_slice(all, (nh + nkv) * hd, nkv * hd), hd);
  };
  TensorView q, k, v;
  views(qkv.view(), &q, &k, &v);
  cpu_->attention(q, k, v, *cpu_kv_, layer_, batch, scale, out.view());
  ASSERT_TRUE(cpu_->take_error().ok());

  // The same on the GPU: qkv in the host layout, the output poisoned with NaN.
  const cuda_testing::DeviceTensor gpu_qkv = cuda_testing::allocate(*gpu_, qkv.cols, n, qkv.stride - qkv.cols);
  const cuda_testing::DeviceTensor gpu_out = cuda_testing::allocate(*gpu_, out.cols, n, out.stride - out.cols);
  ASSERT_TRUE(gpu_qkv.buffer != nullptr && gpu_out.buffer != nullptr);
  gpu_->copy_from_host(qkv.data.data(), gpu_qkv.whole());
  views(gpu_qkv.view, &q, &k, &v);
  gpu_->attention(q, k, v, *gpu_kv_, layer_, batch, scale, gpu_out.view);
  Matrix result = out;
  result.data = cuda_testing::download_whole(*gpu_, gpu_out);
  const Status status = gpu_->take_error();
  ASSERT_TRUE(status.ok()) << status.message();

  compare_caches();
  float v_max = kFillMax;
  for (float x : qkv.data) v_max = std::max(v_max, std::fabs(x));  // bounds every |v| read
  int failures = 0;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < out.cols; ++c) {
      const double g = result.at(r, c), e = out.at(r, c);
      if (!(std::fabs(g - e) <= tolerance * v_max) && failures++ < 5) {
        ADD_FAILURE() << name_of(config_) << ": row " << r << " head " << c / hd << " dim " << c % hd << ": gpu " << g
                      << " cpu " << e;
      }
    }
  }
  EXPECT_EQ(failures, 0);
  for (Sequence* s : sequences) {
    s->n_cached += s->n_new;
    s->n_new = 0;
  }
}

// Both backends compute in f32 from the same cached values (the cache comparison checks
// that they are the same bytes); they differ in summation order and exp (the CPU's
// softmax_exp and CUDA's expf, each within a few ulp). A score of |s| <~ 30 is then
// within ~1e-6 of the other's, a weight within ~2e-6 relative, and an output (a weighted
// mean of V rows) within that times max|v| plus the rounding of sums of up to 64
// positions per chain in f32 (then of the splits' merge) (random signs: ~sqrt(n) 2^-24 max|v|): 2e-5 max|v| leaves a
// wide margin for contexts of a few thousand positions, as the CPU's own test against
// double does.
constexpr double kTolerance = 2e-5;
// 32k positions: 512 splits merged, 2048 tiles rescaled in each chain of the CPU's 128
// chunks: a few times more rounding.
constexpr double kLongTolerance = 5e-5;

class CudaAttentionTest : public ::testing::TestWithParam<Config> {
 protected:
  void SetUp() override { PAGODA_SKIP_WITHOUT_CUDA(); }
};

// One batch of everything at once: a decode after a short prefix, a 600-token prompt
// (its rows take 1 to 10 splits of 64 positions), a chunked prefill and a decode sharing 40
// cached blocks, and a sequence crossing the split boundary at 2048. Then a second step
// reading what the first wrote: decodes, and a chunk of 20 tokens crossing a block.
TEST_P(CudaAttentionTest, MixedBatchesMatchCpu) {
  Harness h(GetParam(), 300, 2, 1);
  ASSERT_TRUE(h.ready());
  Sequence decode{h.take_blocks(4), 36, 1};
  Sequence prompt{h.take_blocks(39), 0, 600};
  const std::vector<int32_t> shared = h.take_blocks(40);  // positions [0, 640), cached in both
  Sequence chunk{shared, 700, 5}, fork{shared, 1100, 1};
  const std::vector<int32_t> chunk_own = h.take_blocks(5), fork_own = h.take_blocks(29);
  chunk.blocks.insert(chunk.blocks.end(), chunk_own.begin(), chunk_own.end());
  fork.blocks.insert(fork.blocks.end(), fork_own.begin(), fork_own.end());
  Sequence boundary{h.take_blocks(129), 2047, 3};
  h.step({&decode, &prompt, &chunk, &fork, &boundary}, 11, kTolerance);

  decode.n_new = 20;  // positions 37..56: into its fourth block
  prompt.n_new = 1;
  boundary.n_new = 1;
  fork.n_new = 2;
  h.step({&boundary, &decode, &prompt, &fork}, 12, kTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, CudaAttentionTest,
    ::testing::Values(Config{DType::F16, 128, 32, 8}, Config{DType::F32, 128, 32, 8}, Config{DType::Q8_0, 128, 32, 8},
                      Config{DType::F16, 64, 9, 3}, Config{DType::F32, 64, 9, 3}, Config{DType::Q8_0, 64, 9, 3},
                      Config{DType::F16, 256, 16, 1}, Config{DType::Q8_0, 96, 6, 6},
                      // Small and odd heads (stories260K's 8, 16, 80, 48; a q8_0 cache has the CPU's
                      // limit of whole 32-value blocks per head).
                      Config{DType::F16, 8, 8, 4}, Config{DType::F32, 16, 4, 2}, Config{DType::F16, 80, 8, 2},
                      Config{DType::F16, 48, 6, 2}),
    [](const ::testing::TestParamInfo<Config>& info) { return name_of(info.param); });

// A decode over 32768 positions and a second sequence sharing its first 1000 blocks, on a
// one-layer cache.
TEST(CudaAttention, ContextOf32kMatchesCpu) {
  PAGODA_SKIP_WITHOUT_CUDA();
  for (const Config& config : {Config{DType::F16, 128, 32, 8}, Config{DType::Q8_0, 128, 32, 8}}) {
    Harness h(config, 2400, 1, 0);
    ASSERT_TRUE(h.ready());
    Sequence longest{h.take_blocks(2048), 32767, 1};
    Sequence fork{std::vector<int32_t>(longest.blocks.begin(), longest.blocks.begin() + 1000), 20000, 2};
    const std::vector<int32_t> own = h.take_blocks(251);  // positions [16000, 20016)
    fork.blocks.insert(fork.blocks.end(), own.begin(), own.end());
    h.step({&longest, &fork}, 21, kLongTolerance);
  }
}

// Head sizes the kernels do not take (above 256) are reported as unsupported.
TEST(CudaAttention, UnsupportedHeadSizesAreErrors) {
  PAGODA_SKIP_WITHOUT_CUDA();
  for (int32_t head_dim : {288, 512}) {
    const std::unique_ptr<Backend> gpu = cuda_testing::make_backend();
    ASSERT_NE(gpu, nullptr);
    Backend& backend = *gpu;
    const KvCacheShape shape{.n_layers = 1, .n_kv_heads = 1, .head_dim = head_dim, .block_size = kBlockSize,
                             .n_blocks = 2, .type = DType::F16};
    Expected<std::unique_ptr<KvStorage>> kv = backend.allocate_kv(shape);
    ASSERT_TRUE(kv.ok()) << kv.status().message();
    Expected<std::unique_ptr<Buffer>> buffer = backend.allocate(4 * sizeof(float) * static_cast<size_t>(head_dim));
    ASSERT_TRUE(buffer.ok());
    const TensorView row = make_view((*buffer)->data(), DType::F32, head_dim, 1);
    const std::vector<int32_t> table = {1};
    const std::vector<SequenceAttention> seqs = {{0, 1, 1, table}};
    const std::vector<int64_t> slots = {kBlockSize};
    const TensorView heads = split_rows_into_heads(row, head_dim);
    backend.attention(heads, heads, heads, **kv, 0, AttentionBatch{seqs, slots, kBlockSize}, 1.0f, row);
    backend.synchronize();
    EXPECT_EQ(backend.take_error().code(), ErrorCode::kUnsupported) << "head_dim " << head_dim;
  }
}

}  // namespace
}  // namespace pagoda::backend
