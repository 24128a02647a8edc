#pragma once
// Paged attention fed the same prompts on different schedules, for the backends'
// batch-invariance tests (attention_invariance_test.cpp, and the CUDA backend's):
// every token's output must have the same bits whether all prompts are prefilled in one
// batch, each alone, in chunks of 1, 5, 16 or 64 tokens, staggered with different chunk
// sizes per sequence, in another batch order or with other block tables. A run's
// outputs are also checked against a double-precision softmax(q k^T * scale) v of the
// values the cache holds, within 2e-5 times the largest |v|.
//
// Four sequences of 530, 260, 77 and 1 tokens, two KV heads with `group` query heads
// each, 16-token blocks taken from a shuffled free list.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "quant/dequantize.h"
#include "quant/dot.h"
#include "test_util.h"

namespace pagoda::backend::attention_testing {

inline constexpr int32_t kKvHeads = 2, kBlockSize = 16;
inline const std::vector<int32_t> kLengths = {530, 260, 77, 1};

struct Config {
  DType type;
  int32_t head_dim;
  int32_t group;  // query heads per KV head
  int32_t n_heads() const { return kKvHeads * group; }
  int32_t width() const { return (n_heads() + 2 * kKvHeads) * head_dim; }  // a fused QKV row
};

// One sequence's tokens: fused [length][q | k | v] rows, as a model's projection leaves them.
struct Prompt {
  int32_t length;
  std::vector<float> qkv;
};

inline std::vector<Prompt> make_prompts(const Config& c) {
  std::vector<Prompt> prompts;
  for (size_t i = 0; i < kLengths.size(); ++i) {
    // Queries twice as large as keys: sharper softmaxes, whose max matters more.
    std::vector<float> qkv =
        testing::random_values(static_cast<size_t>(kLengths[i]) * c.width(), 100 + uint32_t(i));
    for (int32_t t = 0; t < kLengths[i]; ++t) {
      for (int32_t j = 0; j < c.n_heads() * c.head_dim; ++j) qkv[size_t(t) * c.width() + j] *= 2.0f;
    }
    prompts.push_back({kLengths[i], std::move(qkv)});
  }
  return prompts;
}

// A way of feeding the prompts: per step, how many new tokens each sequence gets.
struct Schedule {
  std::vector<std::vector<int32_t>> steps;  // [step][sequence]
  int n_threads = 2;
  uint32_t block_seed = 1;     // order of the free block list
  bool reverse_batch = false;  // sequences placed in the batch last to first
  Isa isa = quant::best_isa();
};

inline Schedule one_batch(int n_threads) {
  return {{kLengths}, n_threads};
}

inline Schedule each_alone() {
  Schedule s{{}, 2, 7};
  for (size_t i = 0; i < kLengths.size(); ++i) {
    std::vector<int32_t> step(kLengths.size(), 0);
    step[i] = kLengths[i];
    s.steps.push_back(step);
  }
  return s;
}

// Sequence i joins at step start[i] and then gets chunk[i] tokens per step.
inline Schedule chunked(std::vector<int32_t> chunk, std::vector<int32_t> start, int n_threads) {
  Schedule s{{}, n_threads, 3, true};
  std::vector<int32_t> done(kLengths.size(), 0);
  for (int32_t step = 0; done != kLengths; ++step) {
    std::vector<int32_t> n(kLengths.size(), 0);
    for (size_t i = 0; i < kLengths.size(); ++i) {
      if (step >= start[i]) n[i] = std::min(chunk[i], kLengths[i] - done[i]);
      done[i] += n[i];
    }
    if (std::any_of(n.begin(), n.end(), [](int32_t x) { return x > 0; })) s.steps.push_back(n);
  }
  return s;
}
inline Schedule chunked(int32_t chunk, int n_threads) {
  return chunked(std::vector<int32_t>(kLengths.size(), chunk),
                 std::vector<int32_t>(kLengths.size(), 0), n_threads);
}

// Runs the schedule on `backend` with a fresh cache; returns each sequence's outputs,
// [length][n_heads * head_dim]. Inputs and outputs go through the backend's own memory,
// so any backend runs it.
inline std::vector<std::vector<float>> run(Backend& backend, const Config& c, const std::vector<Prompt>& prompts,
                                           const Schedule& schedule) {
  const int32_t n_blocks = 80;
  auto kv = backend.allocate_kv({.n_layers = 1,
                                 .n_kv_heads = kKvHeads,
                                 .head_dim = c.head_dim,
                                 .block_size = kBlockSize,
                                 .n_blocks = n_blocks,
                                 .type = c.type});
  EXPECT_TRUE(kv.ok());
  if (!kv.ok()) return {};
  std::vector<int32_t> free_blocks(n_blocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), std::mt19937(schedule.block_seed));

  const size_t n_seqs = prompts.size(), out_width = size_t(c.n_heads()) * c.head_dim;
  std::vector<std::vector<int32_t>> tables(n_seqs);
  std::vector<int32_t> done(n_seqs, 0);
  std::vector<std::vector<float>> outputs(n_seqs);
  for (size_t i = 0; i < n_seqs; ++i) outputs[i].resize(size_t(prompts[i].length) * out_width);
  for (const std::vector<int32_t>& step : schedule.steps) {
    std::vector<float> qkv;
    std::vector<int64_t> slots;
    std::vector<SequenceAttention> seqs;
    std::vector<size_t> seq_ids;
    for (size_t k = 0; k < n_seqs; ++k) {
      const size_t i = schedule.reverse_batch ? n_seqs - 1 - k : k;
      if (step[i] == 0) continue;
      const int32_t n_context = done[i] + step[i];
      while (int32_t(tables[i].size()) * kBlockSize < n_context) {
        tables[i].push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      seqs.push_back({int32_t(slots.size()), step[i], n_context, tables[i]});
      seq_ids.push_back(i);
      for (int32_t p = done[i]; p < n_context; ++p) {
        slots.push_back(int64_t(tables[i][size_t(p / kBlockSize)]) * kBlockSize + p % kBlockSize);
        const float* row = prompts[i].qkv.data() + size_t(p) * c.width();
        qkv.insert(qkv.end(), row, row + c.width());
      }
    }
    const int64_t n = int64_t(slots.size());
    std::vector<float> out(size_t(n) * out_width);
    Expected<std::unique_ptr<Buffer>> in_buffer = backend.allocate(sizeof(float) * qkv.size());
    Expected<std::unique_ptr<Buffer>> out_buffer = backend.allocate(sizeof(float) * out.size());
    EXPECT_TRUE(in_buffer.ok() && out_buffer.ok());
    if (!in_buffer.ok() || !out_buffer.ok()) return {};
    const TensorView all = make_view((*in_buffer)->data(), DType::F32, c.width(), n);
    const TensorView result = make_view((*out_buffer)->data(), DType::F32, int64_t(out_width), n);
    backend.copy_from_host(qkv.data(), all);
    const int64_t q_width = int64_t(c.n_heads()) * c.head_dim,
                  kv_width = int64_t(kKvHeads) * c.head_dim;
    backend.attention(
        split_rows_into_heads(column_slice(all, 0, q_width), c.head_dim),
        split_rows_into_heads(column_slice(all, q_width, kv_width), c.head_dim),
        split_rows_into_heads(column_slice(all, q_width + kv_width, kv_width), c.head_dim), **kv, 0,
        {seqs, slots, kBlockSize}, 1.0f / std::sqrt(float(c.head_dim)), result);
    backend.copy_to_host(result, out.data());
    backend.synchronize();
    const Status status = backend.take_error();
    EXPECT_TRUE(status.ok()) << status.message();
    for (size_t b = 0; b < seqs.size(); ++b) {
      const size_t i = seq_ids[b];
      std::memcpy(outputs[i].data() + size_t(done[i]) * out_width,
                  out.data() + size_t(seqs[b].query_start) * out_width,
                  sizeof(float) * size_t(seqs[b].n_query) * out_width);
      done[i] += seqs[b].n_query;
    }
  }
  return outputs;
}

// The first differing (sequence, token, value), or "" when every bit is the same.
inline std::string first_difference(const std::vector<std::vector<float>>& a,
                             const std::vector<std::vector<float>>& b, size_t out_width) {
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) {
      if (std::memcmp(&a[i][j], &b[i][j], sizeof(float)) != 0) {
        return "sequence " + std::to_string(i) + " token " + std::to_string(j / out_width) +
               " value " + std::to_string(j % out_width) + ": " + std::to_string(a[i][j]) + " vs " +
               std::to_string(b[i][j]);
      }
    }
  }
  return "";
}

// A K or V row as the cache holds it (converted to the cache type), back in f32.
inline std::vector<float> as_stored(DType type, const float* x, int32_t n) {
  std::vector<std::byte> converted(size_t(row_bytes(type, n)));
  quant::dot_kernel(type)->quantize(x, converted.data(), n);
  std::vector<float> back(static_cast<size_t>(n));
  EXPECT_TRUE(quant::dequantize_row(type, converted.data(), back.data(), n).ok());
  return back;
}

// Every output against softmax(q k^T * scale) v in double precision over the stored K/V.
inline void check_against_double(const Config& c, const std::vector<Prompt>& prompts,
                          const std::vector<std::vector<float>>& outputs) {
  const int32_t d = c.head_dim, q_width = c.n_heads() * d;
  const double scale = 1.0f / std::sqrt(float(d));  // the scale the kernel gets, in f32
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Prompt& prompt = prompts[i];
    // [kv head][position][d] as stored.
    std::vector<std::vector<float>> keys(kKvHeads), values(kKvHeads);
    for (int32_t p = 0; p < prompt.length; ++p) {
      const float* row = prompt.qkv.data() + size_t(p) * c.width();
      for (int32_t g = 0; g < kKvHeads; ++g) {
        const std::vector<float> k = as_stored(c.type, row + q_width + g * d, d);
        const std::vector<float> v = as_stored(c.type, row + q_width + (kKvHeads + g) * d, d);
        keys[size_t(g)].insert(keys[size_t(g)].end(), k.begin(), k.end());
        values[size_t(g)].insert(values[size_t(g)].end(), v.begin(), v.end());
      }
    }
    for (int32_t t = 0; t < prompt.length; ++t) {
      for (int32_t h = 0; h < c.n_heads(); ++h) {
        const float* q = prompt.qkv.data() + size_t(t) * c.width() + h * d;
        const testing::ExactAttention expected =
            testing::exact_attention(std::vector<double>(q, q + d), keys[size_t(h / c.group)].data(),
                                     values[size_t(h / c.group)].data(), t + 1, scale);
        for (int32_t j = 0; j < d; ++j) {
          ASSERT_NEAR(outputs[i][size_t(t) * q_width + h * d + j], expected.out[size_t(j)], 2e-5 * expected.max_v)
              << "sequence " << i << " token " << t << " head " << h << " dim " << j;
        }
      }
    }
  }
}

}  // namespace pagoda::backend::attention_testing
