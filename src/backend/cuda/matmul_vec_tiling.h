#pragma once
// The geometry of the few-token matmul's tiles (matmul_vec.cu), as plain arithmetic the
// host can run too: how a weight row is cut into tiles of whole blocks, which aligned
// 16-byte segments a tile's bytes span, and where each chunk of 32 values lands once the
// segments are copied into shared memory. tests/backend/cuda/matmul_vec_tiling_test.cpp
// replays it on the host for every weight format and row alignment.

#include <cstdint>

#include "backend/cuda/host_device.h"

namespace pagoda::backend::cuda {

inline constexpr int kVecWarpSize = 32;
inline constexpr int kVecSegmentBytes = 16;
inline constexpr int kVecChunkValues = 32;

struct VecTiling {
  int chunks_per_block;  // 32-value chunks in a block (8 for the 256-value formats)
  int block_bytes;
  int chunks_per_lane;   // 2 for low-bit formats, so that a tile in flight is about 1 KiB
  int chunks;            // chunks per tile: a warp's lanes times chunks_per_lane
  int bytes;             // bytes per tile: whole blocks
  int segments;          // 16-byte segments a tile may span (it starts anywhere in its first)
  int segments_per_lane;
  int shared_bytes;      // a warp's shared memory: segments_per_lane per lane
};

// For a format of values_per_block values in block_bytes bytes (plain types: a "block"
// of 32 values).
PAGODA_HOST_DEVICE constexpr VecTiling vec_tiling(int values_per_block, int block_bytes) {
  VecTiling t{};
  t.chunks_per_block = values_per_block / kVecChunkValues;
  t.block_bytes = block_bytes;
  t.chunks_per_lane = (kVecWarpSize / t.chunks_per_block) * block_bytes < 1024 ? 2 : 1;
  t.chunks = kVecWarpSize * t.chunks_per_lane;
  t.bytes = t.chunks / t.chunks_per_block * block_bytes;
  t.segments = (t.bytes + kVecSegmentBytes - 1) / kVecSegmentBytes + 1;
  t.segments_per_lane = (t.segments + kVecWarpSize - 1) / kVecWarpSize;
  t.shared_bytes = t.segments_per_lane * kVecWarpSize * kVecSegmentBytes;
  return t;
}

// Tile `tile` of a row at address `row` holding row_bytes: its bytes [begin, end) of the
// row's, the 16-byte aligned address its segments start at, how many there are, and the
// offset of `begin` in the first (where the tile's first byte lands in shared memory).
struct VecTileSpan {
  uintptr_t begin, end, base;
  int offset, n_segments;
};

PAGODA_HOST_DEVICE constexpr VecTileSpan vec_tile_span(VecTiling t, uintptr_t row, int64_t row_bytes,
                                                       int tile) {
  VecTileSpan s{};
  const int64_t first = static_cast<int64_t>(tile) * t.bytes;
  const int64_t last = first + t.bytes < row_bytes ? first + t.bytes : row_bytes;
  s.begin = row + static_cast<uintptr_t>(first);
  s.end = row + static_cast<uintptr_t>(last);
  s.base = s.begin & ~static_cast<uintptr_t>(kVecSegmentBytes - 1);
  s.offset = static_cast<int>(s.begin - s.base);
  s.n_segments = static_cast<int>((s.end - s.base + kVecSegmentBytes - 1) / kVecSegmentBytes);
  return s;
}

// Where chunk `local` (0..chunks) of a tile starts in its shared copy: the byte of its
// block, and which chunk of the block it is.
PAGODA_HOST_DEVICE constexpr int vec_chunk_block_offset(VecTiling t, int offset, int local) {
  return offset + (local / t.chunks_per_block) * t.block_bytes;
}
PAGODA_HOST_DEVICE constexpr int vec_chunk_in_block(VecTiling t, int local) {
  return local % t.chunks_per_block;
}

}  // namespace pagoda::backend::cuda
