#pragma once
// Which query rows and context positions each block of the CUDA attention takes, as plain
// arithmetic the host can run too (both kernels, attention_kernels.cuh's and
// attention_mma_kernel.cuh's, follow it; tests/backend/cuda/attention_rows_test.cpp
// replays whole launches on the host). A row's context [0, position] is cut into splits
// of kSplitPositions aligned to position 0, so a row's splits depend on its own positions
// only.

#include <cstdint>

#include "backend/cuda/host_device.h"

namespace pagoda::backend::cuda {

inline constexpr int kSplitPositions = 64;  // a multiple of 32
inline constexpr int kMaxHeadDim = 256;

// backend::SequenceAttention with its block table flattened into one device array.
struct DeviceSequence {
  int32_t query_start;  // first batch row of the sequence
  int32_t n_query;      // new tokens this step
  int32_t n_context;    // tokens in context after this step
  int32_t table_offset; // its block table starts at block_tables[table_offset]
};

// Positions row `row` attends to: [0, n) with n its position + 1 (causal).
PAGODA_HOST_DEVICE inline int32_t attended_positions(const DeviceSequence& s, int32_t row) {
  return s.n_context - s.n_query + (row - s.query_start) + 1;
}

// Splits of a row attending to n_positions: one per kSplitPositions, at most the grid's
// n_splits (the last split takes the rest, so a batch understating max_n_context still
// attends to every position, only with fewer splits).
PAGODA_HOST_DEVICE inline int32_t splits_of(int32_t n_positions, int32_t n_splits) {
  const int32_t splits = (n_positions + kSplitPositions - 1) / kSplitPositions;
  return splits < n_splits ? splits : n_splits;
}

// The end of a row's positions in split `split` of its row_splits: the split's 64, or
// the rest for its last split.
PAGODA_HOST_DEVICE inline int32_t split_end(int32_t split, int32_t row_splits, int32_t n_positions) {
  return split == row_splits - 1 ? n_positions : (split + 1) * kSplitPositions;
}

// The query rows block `first_row`'s block takes, [first_row, *end): none where a row
// before it in the same group does. Groups are rows_per_block consecutive rows of a
// sequence, aligned to its first query row, cut at the launch's rows [row_begin, row_end).
PAGODA_HOST_DEVICE inline bool block_rows(int32_t row_begin, int32_t row_end, int32_t rows_per_block,
                                          const DeviceSequence& seq, int32_t first_row, int32_t* end) {
  const int32_t offset = first_row - seq.query_start;
  if (offset % rows_per_block != 0 && first_row != row_begin) return false;
  const int32_t group_end = seq.query_start + (offset / rows_per_block + 1) * rows_per_block;
  const int32_t sequence_end = seq.query_start + seq.n_query;
  const int32_t e = group_end < sequence_end ? group_end : sequence_end;
  *end = e < row_end ? e : row_end;
  return true;
}

}  // namespace pagoda::backend::cuda
