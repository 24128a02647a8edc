#pragma once
// What the float gemm's AVX2 and AVX-512 kernels (matmul_float.h) share: a block's
// operand pointers, the horizontal sum of a 16-lane accumulator, and the BF16 pairs'
// handling of denormals. Include from
// matmul_float_avx2.cpp and _avx512.cpp only. Internal linkage (an anonymous namespace),
// so each kernel file keeps its own encoding.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul/matmul_tiles.h"

namespace pagoda::backend::cpu {
namespace {

// Weight rows [row, row + R) and the activations of tokens [col, col + C) of a tile, as
// the kernel reads them.
template <typename Value, typename Activation, int R, int C>
struct BlockOperands {
  const Value* w[R];
  const Activation* a[C];

  BlockOperands(const TileJob& job, int64_t row, int64_t col) {
    for (int r = 0; r < R; ++r) {
      w[r] = reinterpret_cast<const Value*>(job.w + static_cast<size_t>(row + r) * job.w_stride);
    }
    for (int c = 0; c < C; ++c) {
      a[c] = reinterpret_cast<const Activation*>(job.a + static_cast<size_t>(col + c) * job.a_stride);
    }
  }
};

// Sum of a 16-lane accumulator held as lanes [0, 8) and [8, 16), in the tree of the
// AVX-512 horizontal sum: lanes i + (i + 8), then i + (i + 4), then (0 + 2) + (1 + 3).
inline float reduce_lanes16(__m256 low, __m256 high) {
  const __m256 s = _mm256_add_ps(low, high);
  __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  t = _mm_add_ps(t, _mm_movehl_ps(t, t));  // lanes 0 + 2 and 1 + 3
  t = _mm_add_ss(t, _mm_movehdup_ps(t));
  return _mm_cvtss_f32(t);
}

// MXCSR's denormals-are-zero and flush-to-zero for the whole of a BF16 tile, restored at
// its end: the BF16 dot-product instruction's handling of denormals (inputs read as
// zero, results that would be denormal written as zero), in every fused multiply-add and
// addition of the tile, the lane reduction included (kBf16PairChunk).
class DenormalsFlushed {
 public:
  DenormalsFlushed() : saved_(_mm_getcsr()) { write_csr(saved_ | kDenormalsAreZero | kFlushToZero); }
  ~DenormalsFlushed() { write_csr(saved_); }
  DenormalsFlushed(const DenormalsFlushed&) = delete;
  DenormalsFlushed& operator=(const DenormalsFlushed&) = delete;

 private:
  static constexpr uint32_t kDenormalsAreZero = 1u << 6, kFlushToZero = 1u << 15;
  // Also a compiler barrier ("memory"): the tile's operands are loaded after the write
  // that sets the mode and its results stored before the one that restores it, so none
  // of its arithmetic moves out of the mode.
  static void write_csr(uint32_t csr) { asm volatile("ldmxcsr %0" : : "m"(csr) : "memory"); }
  uint32_t saved_;
};

}  // namespace
}  // namespace pagoda::backend::cpu
