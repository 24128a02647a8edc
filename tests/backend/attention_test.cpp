// Paged attention against a double-precision softmax(q k^T * scale) v computed from the
// K/V values the cache holds, with several sequences per batch, shuffled block tables,
// grouped-query ratios 1, 2 and 4, sequences continuing after a cached prefix, and f16,
// f32 and q8_0 caches, in both numerics modes: the fast one (chunked, split over chunks
// for a lone long decode) and the reference one through all three of its schedules (per
// query, tiled, split).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/attention/attention.h"
#include "backend/cpu/cpu_backend.h"
#include "quant/dequantize.h"
#include "quant/dot.h"
#include "test_util.h"

namespace pagoda::backend {
namespace {

using testing::Matrix;

constexpr int32_t kHeads = 8, kHeadDim = 64, kBlockSize = 16, kBlocks = 96;

struct Sequence {
  std::vector<int32_t> blocks;  // block table
  int32_t n_cached = 0;         // tokens already in the cache
};

class AttentionHarness {
 public:
  AttentionHarness(DType type, int32_t n_kv_heads, CpuNumerics numerics, int n_threads = 2)
      : n_kv_heads_(n_kv_heads),
        numerics_(numerics),
        backend_(make_cpu_backend({.n_threads = n_threads, .numerics = numerics})) {
    shape_ = {.n_layers = 2, .n_kv_heads = n_kv_heads, .head_dim = kHeadDim, .block_size = kBlockSize,
              .n_blocks = kBlocks, .type = type};
    auto kv = backend_->allocate_kv(shape_);
    EXPECT_TRUE(kv.ok());
    kv_ = std::move(*kv);
    free_blocks_.resize(kBlocks);
    std::iota(free_blocks_.begin(), free_blocks_.end(), 0);
    std::shuffle(free_blocks_.begin(), free_blocks_.end(), std::mt19937(5));  // non-contiguous tables
  }

  Sequence& add_sequence() { return sequences_.emplace_back(); }

  // Runs one step in which sequence i gets new_tokens[i] tokens (0: not in the batch), and
  // checks every output against the reference.
  void step(const std::vector<int32_t>& new_tokens, uint32_t seed) {
    const int32_t n = std::accumulate(new_tokens.begin(), new_tokens.end(), 0);
    const int64_t width = (kHeads + 2 * n_kv_heads_) * kHeadDim;
    Matrix qkv(n, width, 8, seed);  // fused QKV rows, as a model's projection leaves them
    Matrix out(n, kHeads * kHeadDim, 4);
    std::vector<SequenceAttention> seqs;
    std::vector<int64_t> slots;
    int32_t row = 0;
    for (size_t i = 0; i < new_tokens.size(); ++i) {
      if (new_tokens[i] == 0) continue;
      Sequence& s = sequences_[i];
      const int32_t n_context = s.n_cached + new_tokens[i];
      while (int32_t(s.blocks.size()) * kBlockSize < n_context) {
        s.blocks.push_back(free_blocks_.back());
        free_blocks_.pop_back();
      }
      for (int32_t p = s.n_cached; p < n_context; ++p) slots.push_back(slot(s, p));
      seqs.push_back({row, new_tokens[i], n_context, s.blocks});
      row += new_tokens[i];
    }
    const TensorView all = qkv.view();
    const TensorView q = split_rows_into_heads(column_slice(all, 0, kHeads * kHeadDim), kHeadDim);
    const TensorView k = split_rows_into_heads(column_slice(all, kHeads * kHeadDim, n_kv_heads_ * kHeadDim), kHeadDim);
    const TensorView v = split_rows_into_heads(
        column_slice(all, (kHeads + n_kv_heads_) * kHeadDim, n_kv_heads_ * kHeadDim), kHeadDim);
    const AttentionBatch batch{seqs, slots, kBlockSize};
    const float scale = 1.0f / std::sqrt(float(kHeadDim));
    backend_->attention(q, k, v, *kv_, 1, batch, scale, out.view());
    ASSERT_TRUE(backend_->take_error().ok());

    check_cache_rows(k, v, slots);
    for (const SequenceAttention& s : seqs) check_sequence(s, q, out, scale);
    for (size_t i = 0, b = 0; i < new_tokens.size(); ++i) {
      if (new_tokens[i] == 0) continue;
      sequences_[i].n_cached = seqs[b++].n_context;
    }
  }

  Backend& backend() { return *backend_; }
  KvStorage& kv() { return *kv_; }

 private:
  int64_t slot(const Sequence& s, int64_t p) const { return int64_t(s.blocks[size_t(p / kBlockSize)]) * kBlockSize + p % kBlockSize; }

  std::vector<float> cache_row(const TensorView& cache, int64_t slot, int64_t kv_head) const {
    std::vector<float> out(kHeadDim);
    const auto* row = static_cast<const std::byte*>(cache.data) + slot * cache.nb[1] + kv_head * row_bytes(shape_.type, kHeadDim);
    EXPECT_TRUE(quant::dequantize_row(shape_.type, row, out.data(), kHeadDim).ok());
    return out;
  }

  // The new rows hold the inputs converted to the cache type (bit for bit).
  void check_cache_rows(const TensorView& k, const TensorView& v, const std::vector<int64_t>& slots) {
    const quant::DotKernel* convert = quant::dot_kernel(shape_.type);
    std::vector<std::byte> expected(size_t(row_bytes(shape_.type, kHeadDim)));
    for (size_t t = 0; t < slots.size(); ++t) {
      for (int64_t h = 0; h < n_kv_heads_; ++h) {
        for (const auto& [input, cache] : {std::pair{k, kv_->keys(1)}, std::pair{v, kv_->values(1)}}) {
          convert->quantize(input.row<const float>(h, int64_t(t)), expected.data(), kHeadDim);
          const auto* row = static_cast<const std::byte*>(cache.data) + slots[t] * cache.nb[1] + h * expected.size();
          ASSERT_EQ(std::memcmp(row, expected.data(), expected.size()), 0) << "token " << t << " head " << h;
        }
      }
    }
  }

  // Q as the kernel uses it: f32, except on the reference mode's per-query schedule, which
  // converts it to the K dot format.
  std::vector<double> query_as_seen(const float* q, bool tiled) const {
    std::vector<float> seen(q, q + kHeadDim);
    if (numerics_ == CpuNumerics::kReference && !tiled && shape_.type != DType::F32) {
      std::vector<std::byte> converted(size_t(row_bytes(shape_.type, kHeadDim)));
      quant::dot_kernel(shape_.type)->quantize(q, converted.data(), kHeadDim);
      EXPECT_TRUE(quant::dequantize_row(shape_.type, converted.data(), seen.data(), kHeadDim).ok());
    }
    return {seen.begin(), seen.end()};
  }

  // Within a tolerance times the largest |v|: f16 values accumulated in half precision
  // (the reference mode's per query and split schedules, as the reference build does) lose
  // about 2^-12 per step; every other case only rounds in f32.
  void check_sequence(const SequenceAttention& s, const TensorView& q, Matrix& out, float scale) {
    const Sequence& seq = *std::find_if(sequences_.begin(), sequences_.end(),
                                        [&](const Sequence& x) { return x.blocks.data() == s.block_table.data(); });
    const bool tiled = s.n_query >= cpu::Attention::kTileQueries && shape_.type != DType::Q8_0;
    const bool half_sums = numerics_ == CpuNumerics::kReference && shape_.type == DType::F16 && !tiled;
    const double tolerance = half_sums ? 4e-3 : 2e-5;
    const int32_t group = kHeads / n_kv_heads_;
    // The cache as f32: [kv head][position][dim].
    std::vector<std::vector<float>> keys(static_cast<size_t>(n_kv_heads_)), values(static_cast<size_t>(n_kv_heads_));
    for (int32_t g = 0; g < n_kv_heads_; ++g) {
      for (int64_t p = 0; p < s.n_context; ++p) {
        const std::vector<float> k = cache_row(kv_->keys(1), slot(seq, p), g), v = cache_row(kv_->values(1), slot(seq, p), g);
        keys[size_t(g)].insert(keys[size_t(g)].end(), k.begin(), k.end());
        values[size_t(g)].insert(values[size_t(g)].end(), v.begin(), v.end());
      }
    }
    for (int32_t i = 0; i < s.n_query; ++i) {
      const int64_t row = s.query_start + i, pos = s.n_context - s.n_query + i;
      for (int32_t h = 0; h < kHeads; ++h) {
        const std::vector<double> qv = query_as_seen(q.row<const float>(h, row), tiled);
        const testing::ExactAttention ref = testing::exact_attention(
            qv, keys[size_t(h / group)].data(), values[size_t(h / group)].data(), pos + 1, scale);
        for (int d = 0; d < kHeadDim; ++d) {
          ASSERT_NEAR(out.at(row, h * kHeadDim + d), ref.out[size_t(d)], tolerance * ref.max_v)
              << "query " << i << " of " << s.n_query << " (context " << s.n_context << "), head " << h << ", dim " << d;
        }
      }
    }
  }

  int32_t n_kv_heads_;
  CpuNumerics numerics_;
  KvCacheShape shape_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<KvStorage> kv_;
  std::vector<int32_t> free_blocks_;
  std::vector<Sequence> sequences_;
};

struct Case {
  DType type;
  int32_t n_kv_heads;
  CpuNumerics numerics;
};

class AttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionTest, SeveralSequencesThenContinuations) {
  const Case c = GetParam();
  AttentionHarness h(c.type, c.n_kv_heads, c.numerics);
  for (int i = 0; i < 3; ++i) h.add_sequence();
  h.step({5, 23, 1}, 1);  // prefill three prompts at once
  h.step({3, 1, 7}, 2);   // continue each after its cached prefix
  h.step({0, 1, 1}, 3);   // decode two of them
}

TEST_P(AttentionTest, LongPromptAfterPrefixIsTiled) {
  const Case c = GetParam();
  AttentionHarness h(c.type, c.n_kv_heads, c.numerics);
  h.add_sequence();
  h.add_sequence();
  h.step({30, 2}, 4);
  // 70 new tokens (tiled on f16 / f32 caches) beside a 5-token sequence (per query).
  h.step({70, 5}, 5);
}

TEST_P(AttentionTest, LongContextDecodeIsSplit) {
  const Case c = GetParam();
  AttentionHarness h(c.type, c.n_kv_heads, c.numerics);
  h.add_sequence();
  h.step({600}, 6);
  h.step({1}, 7);  // 601 positions over two threads
  h.step({1}, 8);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const CpuNumerics numerics : {CpuNumerics::kFast, CpuNumerics::kReference}) {
    for (const auto& [type, n_kv_heads] : {std::pair{DType::F16, 8}, {DType::F16, 4}, {DType::F16, 2},
                                            {DType::F32, 8}, {DType::F32, 2}, {DType::Q8_0, 4}}) {
      cases.push_back({type, n_kv_heads, numerics});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    CacheTypesAndGroups, AttentionTest, ::testing::ValuesIn(all_cases()), [](const auto& info) {
      return std::string(info.param.numerics == CpuNumerics::kFast ? "fast_" : "reference_") +
             std::string(dtype_name(info.param.type)) + "_gqa" + std::to_string(kHeads / info.param.n_kv_heads);
    });

// Views and layers the cache does not have are errors of the op. (Slots and block ids
// outside the cache are the batch's: the engine's ModelRunner refuses such a batch
// before any op runs, see model/batch_check.h and tests/model/batch_test.cpp.)
TEST(AttentionErrors, RejectsLayersAndViewsTheCacheDoesNotHave) {
  AttentionHarness h(DType::F16, 4, CpuNumerics::kFast);
  Matrix q(1, kHeads * kHeadDim, 0, 1), kv(1, 4 * kHeadDim, 0, 2), out(1, kHeads * kHeadDim);
  const std::vector<int32_t> table = {0};
  const std::vector<SequenceAttention> seqs = {{0, 1, 1, table}};
  const std::vector<int64_t> slots = {0};
  const TensorView qh = split_rows_into_heads(q.view(), kHeadDim), kh = split_rows_into_heads(kv.view(), kHeadDim);
  h.backend().attention(qh, kh, kh, h.kv(), 2, {seqs, slots, kBlockSize}, 1.0f, out.view());  // no layer 2
  EXPECT_EQ(h.backend().take_error().code(), ErrorCode::kInvalidArgument);
  const TensorView wrong_heads = split_rows_into_heads(q.view(), kHeadDim / 2);
  h.backend().attention(wrong_heads, kh, kh, h.kv(), 0, {seqs, slots, kBlockSize}, 1.0f, out.view());
  EXPECT_EQ(h.backend().take_error().code(), ErrorCode::kInvalidArgument);
  h.backend().attention(qh, kh, kh, h.kv(), 0, {seqs, slots, kBlockSize}, 1.0f, out.view());
  EXPECT_TRUE(h.backend().take_error().ok());
}

}  // namespace
}  // namespace pagoda::backend
