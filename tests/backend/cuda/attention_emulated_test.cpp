// The attention kernels, their own source run on the host by the SIMT emulation
// (simt_emulation.h, whose mma follows the PTX ISA's fragment layout): the one on tensor
// cores (attention_mma_kernel.cuh, f16 caches) and the scalar one with the merge of
// splits (attention_kernels.cuh; f32, f16 and q8_0 caches), launched as attention.cu
// launches them, against attention in double over the same cache: prompts that start a
// sequence or continue a cached one (several query rows a block), decoding rows, contexts
// of one position to several tiles, in one split a row or cut into 64-position splits and
// merged, the cache's blocks handed out in shuffled order, head sizes 64, 80, 128 and 256.
// And batch invariance: a sequence's rows have the same bits alone as beside the others,
// and (scalar kernel) with prompt rows grouped in blocks as one a block. It checks the
// kernels' logic where CI has no GPU; where a GPU is, CudaAttentionTest and
// CudaAttentionInvariance run the kernels themselves and this test skips.
// clang-format off
#include "simt_emulation.h"  // first: it takes over the CUDA qualifiers

#include "backend/cuda/attention_kernels.cuh"
#include "backend/cuda/attention_mma_kernel.cuh"
// clang-format on

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda {
namespace {

constexpr int32_t kKvHeads = 2, kGroup = 4, kHeads = kKvHeads * kGroup, kBlockSize = 16;

// A step's sequences: n_query new rows each, n_context positions after the step.
struct Step {
  std::vector<DeviceSequence> sequences;
  int32_t n_tokens = 0;
  int32_t max_context = 0;
};

Step make_step(const std::vector<std::pair<int32_t, int32_t>>& query_and_context) {
  Step step;
  int32_t table = 0;
  for (const auto& [n_query, n_context] : query_and_context) {
    step.sequences.push_back({step.n_tokens, n_query, n_context, table});
    step.n_tokens += n_query;
    step.max_context = std::max(step.max_context, n_context);
    table += (n_context + kBlockSize - 1) / kBlockSize;
  }
  return step;
}

// The cache of a step: its sequences' blocks in shuffled order, random K and V of `type`.
struct Cache {
  KvType type = KvType::kF16;
  int32_t head_dim = 0;
  int64_t slot_bytes = 0;
  std::vector<int32_t> block_tables;
  std::vector<uint4> k, v;  // [slot][slot_bytes], 16-byte aligned
  float value(const std::vector<uint4>& kv, int64_t slot, int32_t head, int32_t d) const {
    const char* row = reinterpret_cast<const char*>(kv.data()) + slot * slot_bytes;
    switch (type) {
      case KvType::kF32:
        return load_kv<KvType::kF32>(row, head * head_dim + d);
      case KvType::kF16:
        return load_kv<KvType::kF16>(row, head * head_dim + d);
      case KvType::kQ8_0:
        return load_kv<KvType::kQ8_0>(row, head * head_dim + d);
    }
    return 0.0f;
  }
  int64_t slot_of(const DeviceSequence& s, int32_t position) const {
    return static_cast<int64_t>(
               block_tables[static_cast<size_t>(s.table_offset + position / kBlockSize)]) *
               kBlockSize +
           position % kBlockSize;
  }
};

Cache make_cache(const Step& step, KvType type, int32_t head_dim, uint32_t seed) {
  Cache c;
  c.type = type;
  c.head_dim = head_dim;
  const int32_t row_values = kKvHeads * head_dim;
  c.slot_bytes = type == KvType::kF32   ? 4 * row_values
                 : type == KvType::kF16 ? 2 * row_values
                                        : row_values / kQ8Values * kQ8BlockBytes;
  for (const DeviceSequence& s : step.sequences) {
    c.block_tables.resize(c.block_tables.size() +
                          static_cast<size_t>((s.n_context + kBlockSize - 1) / kBlockSize));
  }
  std::iota(c.block_tables.begin(), c.block_tables.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(c.block_tables.begin(), c.block_tables.end(), rng);
  const size_t bytes = c.block_tables.size() * kBlockSize * static_cast<size_t>(c.slot_bytes);
  for (std::vector<uint4>* kv : {&c.k, &c.v}) {
    kv->resize((bytes + 15) / 16);
    auto* p = reinterpret_cast<char*>(kv->data());
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t slot = 0; slot * c.slot_bytes < bytes; ++slot) {
      char* row = p + slot * static_cast<size_t>(c.slot_bytes);
      for (int32_t i = 0; i < row_values; ++i) {
        const float x = normal(rng);
        if (type == KvType::kF32) std::memcpy(row + 4 * i, &x, 4);
        if (type == KvType::kF16) reinterpret_cast<__half*>(row)[i] = __float2half_rn(x);
        if (type == KvType::kQ8_0) {  // a scale of 1/32 a block, quants of about 32 x
          char* block = row + i / kQ8Values * kQ8BlockBytes;
          if (i % kQ8Values == 0) *reinterpret_cast<__half*>(block) = __float2half_rn(1.0f / 32.0f);
          block[2 + i % kQ8Values] =
              static_cast<char>(std::clamp(std::lround(32.0f * x), -127L, 127L));
        }
      }
    }
  }
  return c;
}

enum class Kernel { kTensorCores, kScalar };

// The kernels over the step's rows as attention.cu launches them (its set_block_shape:
// rows grouped in blocks where group_rows and the step has a prompt; n_splits splits a
// row at most, the merge after), out [n_tokens][kHeads][head_dim].
std::vector<float> run(Kernel kernel, const Step& step, const Cache& cache,
                       const std::vector<float>& q, float scale, int32_t n_splits,
                       bool group_rows = true) {
  const int32_t hd = cache.head_dim;
  std::vector<float> out(static_cast<size_t>(step.n_tokens) * kHeads * hd, std::nanf(""));
  std::vector<float> partial_out(static_cast<size_t>(step.n_tokens) * kHeads * n_splits * hd,
                                 std::nanf(""));
  std::vector<float2> partial_state(static_cast<size_t>(step.n_tokens) * kHeads * n_splits);
  std::vector<int32_t> row_sequence;
  int32_t max_query = 0;
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    row_sequence.insert(row_sequence.end(), static_cast<size_t>(step.sequences[i].n_query),
                        static_cast<int32_t>(i));
    max_query = std::max(max_query, step.sequences[i].n_query);
  }
  AttentionArgs a{};
  a.q = reinterpret_cast<const char*>(q.data());
  a.q_head_bytes = hd * static_cast<int64_t>(sizeof(float));
  a.q_token_bytes = kHeads * a.q_head_bytes;
  a.k_cache = reinterpret_cast<const char*>(cache.k.data());
  a.v_cache = reinterpret_cast<const char*>(cache.v.data());
  a.slot_bytes = cache.slot_bytes;
  a.out = reinterpret_cast<char*>(out.data());
  a.out_row_bytes = kHeads * a.q_head_bytes;
  a.partial_out = n_splits > 1 ? partial_out.data() : nullptr;
  a.partial_state = n_splits > 1 ? partial_state.data() : nullptr;
  a.sequences = step.sequences.data();
  a.block_tables = cache.block_tables.data();
  a.row_sequence = row_sequence.data();
  a.row_begin = 0;
  a.row_end = step.n_tokens;
  a.n_heads = kHeads;
  a.group = kGroup;
  a.head_dim = hd;
  a.block_size = kBlockSize;
  a.n_splits = n_splits;
  a.scale = scale;
  a.tensor_cores = kernel == Kernel::kTensorCores;
  set_block_shape(a, max_query, group_rows);
  const int pairs = a.rows_per_block * a.heads_per_block;
  const int threads = a.tensor_cores ? (pairs + 15) / 16 * 32 : pairs * 32;
  const int padded = mma_attention::padded_head_dim(hd);
  const size_t shared = a.tensor_cores ? mma_attention::shared_bytes(padded, threads / 32)
                                       : scalar_attention::shared_bytes(hd, pairs);
  for (unsigned x = 0; x < static_cast<unsigned>(step.n_tokens); ++x) {
    for (unsigned y = 0; y < static_cast<unsigned>(a.head_chunks * kKvHeads); ++y) {
      for (unsigned z = 0; z < static_cast<unsigned>(n_splits); ++z) {
        simt::run_block(
            threads, simt::Index{x, y, z},
            [&] {
              if (!a.tensor_cores) {
                switch (cache.type) {
                  case KvType::kF32:
                    scalar_attention::attention_kernel<KvType::kF32>(a);
                    break;
                  case KvType::kF16:
                    scalar_attention::attention_kernel<KvType::kF16>(a);
                    break;
                  case KvType::kQ8_0:
                    scalar_attention::attention_kernel<KvType::kQ8_0>(a);
                    break;
                }
              } else if (padded == 64) {
                mma_attention::attention_mma_kernel<64>(a);
              } else if (padded == 128) {
                mma_attention::attention_mma_kernel<128>(a);
              } else {
                mma_attention::attention_mma_kernel<256>(a);
              }
            },
            shared);
      }
    }
  }
  if (n_splits > 1) {
    for (unsigned x = 0; x < static_cast<unsigned>(step.n_tokens); ++x) {
      for (unsigned y = 0; y < static_cast<unsigned>(kHeads); ++y) {
        simt::run_block(32, simt::Index{x, y, 0},
                        [&] { scalar_attention::merge_splits_kernel(a); });
      }
    }
  }
  return out;
}

// Row `row` (of sequence s), head `head` in double: softmax(scale q . k) v over its positions.
std::vector<double> reference_row(const Cache& cache, const std::vector<float>& q, float scale,
                                  const DeviceSequence& s, int32_t row, int32_t head) {
  const int32_t hd = cache.head_dim, kv_head = head / kGroup, n = attended_positions(s, row);
  const float* qr = q.data() + (static_cast<size_t>(row) * kHeads + head) * hd;
  std::vector<double> scores(static_cast<size_t>(n));
  for (int32_t p = 0; p < n; ++p) {
    double dot = 0.0;
    for (int32_t d = 0; d < hd; ++d)
      dot += static_cast<double>(qr[d]) * cache.value(cache.k, cache.slot_of(s, p), kv_head, d);
    scores[static_cast<size_t>(p)] = dot * scale;
  }
  const double top = *std::max_element(scores.begin(), scores.end());
  double sum = 0.0;
  for (double& x : scores) sum += (x = std::exp(x - top));
  std::vector<double> o(static_cast<size_t>(hd), 0.0);
  for (int32_t p = 0; p < n; ++p) {
    for (int32_t d = 0; d < hd; ++d) {
      o[static_cast<size_t>(d)] += scores[static_cast<size_t>(p)] / sum *
                                   cache.value(cache.v, cache.slot_of(s, p), kv_head, d);
    }
  }
  return o;
}

// q [n_tokens][kHeads][head_dim] of the step: normal values.
std::vector<float> random_queries(const Step& step, int32_t head_dim, uint32_t seed) {
  return cuda_testing::random_rows(static_cast<int64_t>(kHeads) * head_dim, step.n_tokens, seed);
}

// The grid's splits as attention.cu chooses them (attention_splits, from the batch's
// longest context).
int32_t splits_for(const Step& step) {
  DeviceAttentionBatch batch;
  batch.max_n_context = step.max_context;
  return attention_splits(batch);
}

struct Case {
  Kernel kernel;
  KvType cache;
  int32_t head_dim;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  const char* cache = c.cache == KvType::kF32 ? "f32" : c.cache == KvType::kF16 ? "f16" : "q8_0";
  return std::string(c.kernel == Kernel::kTensorCores ? "mma" : "scalar") + "_" + cache + "_" +
         std::to_string(c.head_dim);
}

class EmulatedAttention : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0)
      GTEST_SKIP() << "a GPU is here: CudaAttentionTest runs the kernels themselves";
  }
};

// Each output within 2e-5 of the double result (the tensor cores' f16 hi + lo halves of
// q and of the weights keep about 22 bits; the outputs are weighted means of values of
// about 1), in one split a row and in 64-position splits merged.
TEST_P(EmulatedAttention, MatchesAttentionInDouble) {
  const Case c = GetParam();
  // A new prompt of 20 rows; a prompt of 5 continuing 95 cached positions; a row alone;
  // decoding rows over 1, 37 and 150 positions.
  const Step step = make_step({{20, 20}, {5, 100}, {1, 1}, {1, 37}, {1, 150}});
  const Cache cache = make_cache(step, c.cache, c.head_dim, 41);
  const std::vector<float> q = random_queries(step, c.head_dim, 42);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (const int32_t n_splits : {1, splits_for(step)}) {
    const std::vector<float> out = run(c.kernel, step, cache, q, scale, n_splits);
    double worst = 0.0;
    std::string where;
    for (const DeviceSequence& s : step.sequences) {
      for (int32_t row = s.query_start; row < s.query_start + s.n_query; ++row) {
        for (int32_t head = 0; head < kHeads; ++head) {
          const std::vector<double> want = reference_row(cache, q, scale, s, row, head);
          for (int32_t d = 0; d < c.head_dim; ++d) {
            const double got = out[(static_cast<size_t>(row) * kHeads + head) * c.head_dim + d];
            const double error =
                std::isnan(got) ? INFINITY : std::abs(got - want[static_cast<size_t>(d)]);
            if (error > worst) {
              worst = error;
              where = "row " + std::to_string(row) + " head " + std::to_string(head) + " value " +
                      std::to_string(d);
            }
          }
        }
      }
    }
    EXPECT_LT(worst, 2e-5) << case_name({c, 0}) << ", " << n_splits << " splits, at " << where;
  }
}

// A sequence's rows alone give the bits they have beside the others (other rows in its
// blocks' tiles weigh exactly 0); the scalar kernel's rows grouped in blocks give the bits
// they have one a block.
TEST_P(EmulatedAttention, ASequenceAloneHasTheBitsItHasInTheBatch) {
  const Case c = GetParam();
  const Step step = make_step({{7, 70}, {12, 12}, {1, 90}});
  const Cache cache = make_cache(step, c.cache, c.head_dim, 51);
  const std::vector<float> q = random_queries(step, c.head_dim, 52);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const int32_t n_splits = splits_for(step);
  const std::vector<float> batch = run(c.kernel, step, cache, q, scale, n_splits);
  const size_t row_values = static_cast<size_t>(kHeads) * c.head_dim;
  if (c.kernel == Kernel::kScalar) {
    const std::vector<float> ungrouped = run(c.kernel, step, cache, q, scale, n_splits, false);
    EXPECT_EQ(std::memcmp(ungrouped.data(), batch.data(), batch.size() * sizeof(float)), 0)
        << case_name({c, 0});
  }
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    Step alone;
    alone.sequences = {step.sequences[i]};
    alone.sequences[0].query_start = 0;
    alone.n_tokens = alone.sequences[0].n_query;
    alone.max_context = step.max_context;  // the same grid of splits
    const auto first = static_cast<int64_t>(step.sequences[i].query_start * row_values);
    const std::vector<float> q_alone(
        q.begin() + first, q.begin() + first + alone.n_tokens * static_cast<int64_t>(row_values));
    const std::vector<float> got = run(c.kernel, alone, cache, q_alone, scale, n_splits);
    EXPECT_EQ(std::memcmp(got.data(), batch.data() + first, got.size() * sizeof(float)), 0)
        << "sequence " << i << ", " << case_name({c, 0});
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, EmulatedAttention,
                         ::testing::Values(Case{Kernel::kTensorCores, KvType::kF16, 64},
                                           Case{Kernel::kTensorCores, KvType::kF16, 80},
                                           Case{Kernel::kTensorCores, KvType::kF16, 128},
                                           Case{Kernel::kTensorCores, KvType::kF16, 256},
                                           Case{Kernel::kScalar, KvType::kF32, 64},
                                           Case{Kernel::kScalar, KvType::kF16, 80},
                                           Case{Kernel::kScalar, KvType::kQ8_0, 128},
                                           Case{Kernel::kScalar, KvType::kF16, 256}),
                         case_name);

}  // namespace
}  // namespace pagoda::backend::cuda
