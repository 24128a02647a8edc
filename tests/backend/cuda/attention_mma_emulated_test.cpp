// The tensor-core attention kernel (attention_mma_kernel.cuh), its own source run on the
// host by the SIMT emulation (simt_emulation.h, whose mma follows the PTX ISA's fragment
// layout), against attention in double over the same f16 cache: prompts that start a
// sequence or continue a cached one (several query rows a block, as attention.cu groups
// them), decoding rows, contexts of one position to several 64-position tiles, blocks of
// the cache handed out in shuffled order, head sizes 64, 128 and 256 (and 80, padded). And
// batch invariance: a sequence's rows have the same bits alone as beside the others. It
// checks the kernel's logic where CI has no GPU; where a GPU is, CudaAttentionTest runs
// the kernel itself and this test skips.
// clang-format off
#include "simt_emulation.h"  // first: it takes over the CUDA qualifiers

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

namespace pagoda::backend::cuda {
namespace {

constexpr int32_t kKvHeads = 2, kGroup = 4, kHeads = kKvHeads * kGroup, kBlockSize = 16;

// A step's sequences: n_query new rows each, n_context positions after the step.
struct Step {
  std::vector<DeviceSequence> sequences;
  int32_t n_tokens = 0;
};

Step make_step(const std::vector<std::pair<int32_t, int32_t>>& query_and_context) {
  Step step;
  int32_t table = 0;
  for (const auto& [n_query, n_context] : query_and_context) {
    step.sequences.push_back({step.n_tokens, n_query, n_context, table});
    step.n_tokens += n_query;
    table += (n_context + kBlockSize - 1) / kBlockSize;
  }
  return step;
}

// The cache of a step: its sequences' blocks in shuffled order, random f16 K and V.
struct Cache {
  int32_t head_dim = 0;
  std::vector<int32_t> block_tables;
  std::vector<__half> k, v;  // [slot][kv head][head_dim]
  int64_t slot_bytes() const {
    return static_cast<int64_t>(kKvHeads) * head_dim * static_cast<int64_t>(sizeof(__half));
  }
  float k_at(int64_t slot, int32_t head, int32_t d) const {
    return __half2float(k[index(slot, head, d)]);
  }
  float v_at(int64_t slot, int32_t head, int32_t d) const {
    return __half2float(v[index(slot, head, d)]);
  }
  size_t index(int64_t slot, int32_t head, int32_t d) const {
    return static_cast<size_t>((slot * kKvHeads + head) * head_dim + d);
  }
  int64_t slot_of(const DeviceSequence& s, int32_t position) const {
    return static_cast<int64_t>(
               block_tables[static_cast<size_t>(s.table_offset + position / kBlockSize)]) *
               kBlockSize +
           position % kBlockSize;
  }
};

Cache make_cache(const Step& step, int32_t head_dim, uint32_t seed) {
  Cache c;
  c.head_dim = head_dim;
  for (const DeviceSequence& s : step.sequences)
    c.block_tables.resize(c.block_tables.size() + (s.n_context + kBlockSize - 1) / kBlockSize);
  std::iota(c.block_tables.begin(), c.block_tables.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(c.block_tables.begin(), c.block_tables.end(), rng);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const size_t values =
      c.block_tables.size() * kBlockSize * kKvHeads * static_cast<size_t>(head_dim);
  for (size_t i = 0; i < values; ++i) {
    c.k.push_back(__float2half_rn(normal(rng)));
    c.v.push_back(__float2half_rn(normal(rng)));
  }
  return c;
}

// Runs the kernel over the step's rows as attention.cu launches it (one split a row: the
// kernel walks a long context tile by tile), out [n_tokens][kHeads][head_dim].
std::vector<float> run_kernel(const Step& step, const Cache& cache, const std::vector<float>& q,
                              float scale) {
  const int32_t hd = cache.head_dim, padded = mma_attention::padded_head_dim(hd);
  std::vector<float> out(static_cast<size_t>(step.n_tokens) * kHeads * hd, std::nanf(""));
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
  a.slot_bytes = cache.slot_bytes();
  a.out = reinterpret_cast<char*>(out.data());
  a.out_row_bytes = kHeads * a.q_head_bytes;
  a.sequences = step.sequences.data();
  a.block_tables = cache.block_tables.data();
  a.row_sequence = row_sequence.data();
  a.row_begin = 0;
  a.row_end = step.n_tokens;
  a.n_heads = kHeads;
  a.group = kGroup;
  a.head_dim = hd;
  a.block_size = kBlockSize;
  const int32_t most = attention_mma_block_rows(hd);
  a.heads_per_block = std::min(kGroup, most);
  a.head_chunks = (kGroup + a.heads_per_block - 1) / a.heads_per_block;
  a.rows_per_block = max_query > 1 && most / a.heads_per_block > 1 ? most / a.heads_per_block : 1;
  a.n_splits = 1;
  a.scale = scale;
  a.tensor_cores = true;
  const int warps = (a.rows_per_block * a.heads_per_block + 15) / 16;
  const size_t shared = mma_attention::shared_bytes(padded, warps);
  for (unsigned x = 0; x < static_cast<unsigned>(step.n_tokens); ++x) {
    for (unsigned y = 0; y < static_cast<unsigned>(a.head_chunks * kKvHeads); ++y) {
      simt::run_block(
          warps * 32, simt::Index{x, y, 0},
          [&] {
            switch (padded) {
              case 64:
                mma_attention::attention_mma_kernel<64>(a);
                break;
              case 128:
                mma_attention::attention_mma_kernel<128>(a);
                break;
              default:
                mma_attention::attention_mma_kernel<256>(a);
                break;
            }
          },
          shared);
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
      dot += static_cast<double>(qr[d]) * cache.k_at(cache.slot_of(s, p), kv_head, d);
    scores[static_cast<size_t>(p)] = dot * scale;
  }
  const double top = *std::max_element(scores.begin(), scores.end());
  double sum = 0.0;
  for (double& x : scores) sum += (x = std::exp(x - top));
  std::vector<double> o(static_cast<size_t>(hd), 0.0);
  for (int32_t p = 0; p < n; ++p) {
    for (int32_t d = 0; d < hd; ++d)
      o[static_cast<size_t>(d)] +=
          scores[static_cast<size_t>(p)] / sum * cache.v_at(cache.slot_of(s, p), kv_head, d);
  }
  return o;
}

class EmulatedAttentionMma : public ::testing::TestWithParam<int32_t> {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0)
      GTEST_SKIP() << "a GPU is here: CudaAttentionTest runs the kernel itself";
  }
};

// Each output within 2e-5 of the double result (the f16 hi + lo halves of q and of the
// weights keep about 22 bits; the outputs are weighted means of values of about 1).
TEST_P(EmulatedAttentionMma, MatchesAttentionInDouble) {
  const int32_t hd = GetParam();
  // A new prompt of 20 rows; a prompt of 5 continuing 95 cached positions (two tiles); a
  // row alone; decoding rows over 1, 37 and 150 positions.
  const Step step = make_step({{20, 20}, {5, 100}, {1, 1}, {1, 37}, {1, 150}});
  const Cache cache = make_cache(step, hd, 41);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(step.n_tokens) * kHeads * hd);
  for (float& x : q) x = normal(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::vector<float> out = run_kernel(step, cache, q, scale);
  double worst = 0.0;
  std::string where;
  for (const DeviceSequence& s : step.sequences) {
    for (int32_t row = s.query_start; row < s.query_start + s.n_query; ++row) {
      for (int32_t head = 0; head < kHeads; ++head) {
        const std::vector<double> want = reference_row(cache, q, scale, s, row, head);
        for (int32_t d = 0; d < hd; ++d) {
          const double got = out[(static_cast<size_t>(row) * kHeads + head) * hd + d];
          const double error =
              std::isnan(got) ? INFINITY : std::abs(got - want[static_cast<size_t>(d)]);
          if (error > worst)
            worst = error, where = "row " + std::to_string(row) + " head " + std::to_string(head) +
                                   " value " + std::to_string(d);
        }
      }
    }
  }
  EXPECT_LT(worst, 2e-5) << "head size " << hd << ", at " << where;
}

// A sequence's rows alone give the bits they have beside the others (other rows in its
// blocks' tiles are scored -inf, and weigh exactly 0).
TEST_P(EmulatedAttentionMma, ASequenceAloneHasTheBitsItHasInTheBatch) {
  const int32_t hd = GetParam();
  const Step step = make_step({{7, 70}, {12, 12}, {1, 90}});
  const Cache cache = make_cache(step, hd, 51);
  std::mt19937 rng(52);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(step.n_tokens) * kHeads * hd);
  for (float& x : q) x = normal(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const std::vector<float> batch = run_kernel(step, cache, q, scale);
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    DeviceSequence alone_sequence = step.sequences[i];
    const int32_t first = alone_sequence.query_start;
    alone_sequence.query_start = 0;
    Step alone;
    alone.sequences = {alone_sequence};
    alone.n_tokens = alone_sequence.n_query;
    const size_t row_values = static_cast<size_t>(kHeads) * hd;
    const std::vector<float> q_alone(
        q.begin() + first * static_cast<int64_t>(row_values),
        q.begin() + (first + alone.n_tokens) * static_cast<int64_t>(row_values));
    const std::vector<float> got = run_kernel(alone, cache, q_alone, scale);
    EXPECT_EQ(
        std::memcmp(got.data(), batch.data() + first * row_values, got.size() * sizeof(float)), 0)
        << "sequence " << i << ", head size " << hd;
  }
}

INSTANTIATE_TEST_SUITE_P(HeadSizes, EmulatedAttentionMma, ::testing::Values(64, 80, 128, 256),
                         [](const ::testing::TestParamInfo<int32_t>& info) {
                           return std::to_string(info.param);
                         });

}  // namespace
}  // namespace pagoda::backend::cuda
