#pragma once
// What the float gemm's AVX2 and AVX-512 kernels (matmul_float.h) share: a block's
// operand pointers and the horizontal sum of a 16-lane accumulator. Include from
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

}  // namespace
}  // namespace pagoda::backend::cpu
