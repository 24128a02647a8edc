// The CUDA attention's grid rules (backend/cuda/attention_rows.h) replayed on the host,
// no GPU needed: for random batches of prompts, chunks and decodes, every row-group size
// the kernels use, launches cut into row pieces as run_attention cuts them, and split
// counts from attention_splits (and understated ones), every (row, split) of every row
// must be taken by exactly one block, a row's splits must cover its positions [0, n)
// once, in 64-position splits aligned to 0 but for the last, and a row's splits must
// not depend on the block size or the pieces (batch invariance).

#include "backend/cuda/attention_rows.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/ops.h"

namespace pagoda::backend::cuda {
namespace {

struct Batch {
  std::vector<DeviceSequence> sequences;
  std::vector<int32_t> row_sequence;  // [rows]
  int32_t max_n_context = 0;
};

Batch random_batch(std::mt19937& rng) {
  Batch b;
  std::uniform_int_distribution<int> count(1, 6), kind(0, 2), cached(0, 3000), prompt(2, 300);
  const int n = count(rng);
  for (int i = 0; i < n; ++i) {
    DeviceSequence s{};
    s.query_start = static_cast<int32_t>(b.row_sequence.size());
    switch (kind(rng)) {
      case 0: s.n_query = 1; s.n_context = cached(rng) + 1; break;          // decoding
      case 1: s.n_query = prompt(rng); s.n_context = s.n_query; break;      // a whole prompt
      default: s.n_query = prompt(rng); s.n_context = cached(rng) + s.n_query; break;  // a chunk
    }
    b.max_n_context = std::max(b.max_n_context, s.n_context);
    b.sequences.push_back(s);
    for (int32_t r = 0; r < s.n_query; ++r) b.row_sequence.push_back(i);
  }
  return b;
}

// Visits of (row, split) -> [begin, end) of positions, over one attention() call.
using Visits = std::map<std::pair<int32_t, int32_t>, std::vector<std::pair<int32_t, int32_t>>>;

// The grid of one attention() call, piece by piece, as the kernels walk it.
Visits replay(const Batch& b, int32_t rows_per_block, int32_t n_splits, int32_t piece) {
  Visits visits;
  const auto n_rows = static_cast<int32_t>(b.row_sequence.size());
  for (int32_t row_begin = 0; row_begin < n_rows; row_begin += piece) {
    const int32_t row_end = std::min(n_rows, row_begin + piece);
    for (int32_t first_row = row_begin; first_row < row_end; ++first_row) {  // grid x
      const DeviceSequence& seq = b.sequences[static_cast<size_t>(b.row_sequence[static_cast<size_t>(first_row)])];
      int32_t rows_end = 0;
      if (!block_rows(row_begin, row_end, rows_per_block, seq, first_row, &rows_end)) continue;
      const int32_t last_splits = splits_of(attended_positions(seq, rows_end - 1), n_splits);
      for (int32_t split = 0; split < n_splits; ++split) {  // grid z
        if (split >= last_splits) continue;
        for (int32_t row = first_row; row < rows_end; ++row) {
          const int32_t n = attended_positions(seq, row);
          const int32_t row_splits = splits_of(n, n_splits);
          if (split >= row_splits) continue;
          visits[{row, split}].push_back({split * kSplitPositions, split_end(split, row_splits, n)});
        }
      }
    }
  }
  return visits;
}

TEST(CudaAttentionRows, EveryRowSplitIsTakenOnceAndCoversItsPositions) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 100; ++trial) {
    const Batch b = random_batch(rng);
    const auto n_rows = static_cast<int32_t>(b.row_sequence.size());
    DeviceAttentionBatch device_batch;
    device_batch.max_n_context = b.max_n_context;
    const int32_t grid_splits = attention_splits(device_batch);
    const int32_t needed = (b.max_n_context + kSplitPositions - 1) / kSplitPositions;
    ASSERT_GE(grid_splits, needed);
    ASSERT_TRUE(std::has_single_bit(static_cast<uint32_t>(grid_splits)));
    std::map<int32_t, std::vector<std::pair<int32_t, int32_t>>> reference;  // row -> its splits' ranges
    for (const int32_t n_splits : {grid_splits, std::max(1, needed / 3)}) {
      for (const int32_t rows_per_block : {1, 4, 16, 21, 64}) {
        for (const int32_t piece : {n_rows, std::max(1, n_rows / 3), 7}) {
          const std::string where = "trial " + std::to_string(trial) + ", " + std::to_string(n_splits) +
                                    " splits, " + std::to_string(rows_per_block) + " rows a block, pieces of " +
                                    std::to_string(piece);
          const Visits visits = replay(b, rows_per_block, n_splits, piece);
          for (int32_t row = 0; row < n_rows; ++row) {
            const DeviceSequence& seq = b.sequences[static_cast<size_t>(b.row_sequence[static_cast<size_t>(row)])];
            const int32_t n = attended_positions(seq, row);
            const int32_t row_splits = splits_of(n, n_splits);
            std::vector<std::pair<int32_t, int32_t>> ranges;
            for (int32_t split = 0; split < row_splits; ++split) {
              const auto it = visits.find({row, split});
              ASSERT_NE(it, visits.end()) << where << ": row " << row << " split " << split << " not taken";
              ASSERT_EQ(it->second.size(), 1u) << where << ": row " << row << " split " << split << " taken "
                                               << it->second.size() << " times";
              ranges.push_back(it->second.front());
            }
            // The splits cover [0, n) in order, each a full 64 but the last.
            int32_t next = 0;
            for (size_t s = 0; s < ranges.size(); ++s) {
              ASSERT_EQ(ranges[s].first, next) << where << ": row " << row;
              ASSERT_GT(ranges[s].second, ranges[s].first) << where << ": row " << row;
              if (s + 1 < ranges.size()) {
                ASSERT_EQ(ranges[s].second - ranges[s].first, kSplitPositions) << where << ": row " << row;
              }
              next = ranges[s].second;
            }
            ASSERT_EQ(next, n) << where << ": row " << row;
            // With the grid's own split count, a row's splits are its own, whatever the launch.
            if (n_splits == grid_splits) {
              auto [entry, added] = reference.try_emplace(row, ranges);
              if (!added) {
                ASSERT_EQ(entry->second, ranges) << where << ": row " << row;
              }
            }
          }
          for (const auto& [key, taken] : visits) {
            ASSERT_LT(key.first, n_rows) << where;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::backend::cuda
