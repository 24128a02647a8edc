// The few-token matmul's tile geometry (backend/cuda/matmul_vec_tiling.h) replayed on the
// host, no GPU needed: for every weight format, row lengths of one to many tiles and a
// matrix at every even address modulo 16, each tile's aligned 16-byte segments are
// copied into a stand-in for shared memory as the kernel copies them (bytes outside the
// matrix left zero), and every chunk of every row must then be found, once, at the place
// the kernel reads it from, byte for byte; no tile may span more segments than a warp's
// shared memory holds.

#include "backend/cuda/matmul_vec_tiling.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {
namespace {

using cuda::kVecChunkValues;
using cuda::kVecSegmentBytes;
using cuda::VecTileSpan;
using cuda::VecTiling;

// The kernel's block of a format: plain types are read as blocks of 32 values.
struct Format {
  int values_per_block, block_bytes, value_bytes;  // value_bytes: plain types only
};
Format format_of(DType type) {
  const DTypeTraits& t = traits(type);
  if (is_plain_type(type)) {
    return {kVecChunkValues, kVecChunkValues * static_cast<int>(t.type_size),
            static_cast<int>(t.type_size)};
  }
  return {static_cast<int>(t.block_size), static_cast<int>(t.type_size), 0};
}

std::string where(DType type, int64_t n_in, int misalignment, int64_t row, int tile) {
  return std::string(dtype_name(type)) + " n_in " + std::to_string(n_in) + " at +" +
         std::to_string(misalignment) + " row " + std::to_string(row) + " tile " +
         std::to_string(tile);
}

class VecTilingTest : public ::testing::TestWithParam<DType> {};

TEST_P(VecTilingTest, EveryChunkLandsWhereTheKernelReadsIt) {
  const DType type = GetParam();
  const Format f = format_of(type);
  const VecTiling g = cuda::vec_tiling(f.values_per_block, f.block_bytes);
  ASSERT_GE(g.segments_per_lane * 32, g.segments);
  const std::vector<int64_t> lengths = is_plain_type(type)
                                           ? std::vector<int64_t>{1, 31, 100, 576, 2048, 4100}
                                           : std::vector<int64_t>{256, 512, 2048, 5632, 8192};
  for (const int64_t n_in : lengths) {
    if (n_in % f.values_per_block != 0 && !is_plain_type(type)) continue;
    const int64_t row_bytes = pagoda::row_bytes(type, n_in);
    const int64_t n_chunks = (n_in + kVecChunkValues - 1) / kVecChunkValues;
    const int n_tiles = static_cast<int>((n_chunks + g.chunks - 1) / g.chunks);
    constexpr int64_t kRows = 3;
    for (int misalignment = 0; misalignment < kVecSegmentBytes;
         misalignment += f.value_bytes == 4 ? 4 : 2) {
      // The "device memory": a matrix of kRows rows (distinct bytes) at 16-aligned + misalignment.
      std::vector<uint8_t> memory(static_cast<size_t>(kRows * row_bytes + 64), 0xEE);
      const uintptr_t aligned = (reinterpret_cast<uintptr_t>(memory.data()) + 15) & ~uintptr_t{15};
      uint8_t* matrix = reinterpret_cast<uint8_t*>(aligned) + misalignment;
      for (int64_t i = 0; i < kRows * row_bytes; ++i)
        matrix[i] = static_cast<uint8_t>(i * 131 + i / 251);
      const uintptr_t lo = reinterpret_cast<uintptr_t>(matrix),
                      hi = lo + static_cast<uintptr_t>(kRows * row_bytes);
      for (int64_t row = 0; row < kRows; ++row) {
        const uintptr_t row_address = lo + static_cast<uintptr_t>(row * row_bytes);
        std::vector<int> seen(static_cast<size_t>(n_chunks), 0);
        for (int tile = 0; tile < n_tiles; ++tile) {
          const VecTileSpan span = cuda::vec_tile_span(g, row_address, row_bytes, tile);
          ASSERT_EQ(span.base % kVecSegmentBytes, 0u);
          ASSERT_LE(span.n_segments, g.segments) << where(type, n_in, misalignment, row, tile);
          std::vector<uint8_t> shared(static_cast<size_t>(g.shared_bytes), 0);
          for (int s = 0; s < span.n_segments; ++s) {
            for (int b = 0; b < kVecSegmentBytes; ++b) {
              const uintptr_t address =
                  span.base + static_cast<uintptr_t>(s * kVecSegmentBytes + b);
              if (address >= lo && address < hi)
                shared[static_cast<size_t>(s * kVecSegmentBytes + b)] =
                    *reinterpret_cast<const uint8_t*>(address);
            }
          }
          for (int local = 0; local < g.chunks; ++local) {
            const int64_t c = static_cast<int64_t>(tile) * g.chunks + local;
            if (c >= n_chunks) break;
            ++seen[static_cast<size_t>(c)];
            const int at = cuda::vec_chunk_block_offset(g, span.offset, local);
            ASSERT_EQ(cuda::vec_chunk_in_block(g, local), c % g.chunks_per_block);
            // The chunk's bytes: its block (block formats) or its values (plain types).
            const int64_t source = is_plain_type(type) ? c * kVecChunkValues * f.value_bytes
                                                       : c / g.chunks_per_block * f.block_bytes;
            const int64_t length =
                is_plain_type(type)
                    ? std::min<int64_t>(kVecChunkValues, n_in - c * kVecChunkValues) * f.value_bytes
                    : f.block_bytes;
            ASSERT_LE(at + length, g.shared_bytes) << where(type, n_in, misalignment, row, tile);
            ASSERT_EQ(std::memcmp(shared.data() + at, matrix + row * row_bytes + source,
                                  static_cast<size_t>(length)),
                      0)
                << where(type, n_in, misalignment, row, tile) << " chunk " << c;
          }
        }
        for (int64_t c = 0; c < n_chunks; ++c) {
          ASSERT_EQ(seen[static_cast<size_t>(c)], 1)
              << where(type, n_in, misalignment, row, -1) << " chunk " << c;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, VecTilingTest, ::testing::ValuesIn(kWeightTypes),
                         type_test_name);

}  // namespace
}  // namespace pagoda::backend::cuda_testing
