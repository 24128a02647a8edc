// The fast float gemm (see matmul_float.h) on AVX-512: each output's 16-lane accumulator
// is one 512-bit register, value i of every 16-value chunk fused into lane i, then the
// lanes reduced as the reference's AVX-512 horizontal sum reduces them: lane for lane the
// arithmetic of the AVX2 kernel (matmul_float_avx2.cpp, whose two 8-lane halves are this
// register's halves), so the same bits, with half the multiply-adds and conversions. 4
// weight rows x 4 tokens per block: 16 accumulators, each weight chunk loaded (F16:
// widened) once for four dot products, an F16 tile's activations widened once for all its
// rows. Tiles of few tokens run the AVX2 kernel (kStreamTokens).

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul/matmul_float.h"
#include "backend/cpu/matmul/matmul_float_lanes.h"

// GCC 12 warns that the "undefined" source vectors of _mm512_cvtph_ps and
// _mm512_extractf32x8_ps may be used uninitialized (its header initializes them from
// themselves, on purpose); they are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace pagoda::backend::cpu::avx512 {
namespace {

constexpr int kBlockRows = 4;
constexpr int kBlockCols = 4;
// Tiles of at most this many tokens stream their rows from memory: the AVX2 kernel (its
// rows asked for ahead) reads them as fast or faster; past it the multiply-adds and
// conversions bound a tile, and here they take half the instructions.
constexpr int64_t kStreamTokens = 4;

// Weights of type Value against activations of type Activation, each widened to f32.
inline __m512 widen16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 widen16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
struct F32Values {
  using Value = float;
  using Activation = float;
};
// F16 weights against their f16-rounded activations, widened once per tile (exactly:
// every f16 value is an f32 value) into scratch, not once per block of rows.
struct F16Values {
  using Value = uint16_t;
  using Activation = float;
};
// BF16 weights (a type of their own for widen16) against their bf16-rounded activations,
// likewise widened once per tile.
struct BF16Bits {
  uint16_t bits;
};
inline __m512 widen16(const BF16Bits* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
struct BF16Values {
  using Value = BF16Bits;
  using Activation = float;
};

// Outputs of weight rows [row, row + R) x tokens [col, col + C) of the tile.
template <class Values, int R, int C>
void gemm_block(const TileJob& job, int64_t row, int64_t col) {
  const BlockOperands<typename Values::Value, typename Values::Activation, R, C> in(job, row, col);
  const auto& w = in.w;
  const auto& a = in.a;
  __m512 acc[R][C];
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < job.n_in; i += kReferenceGemmLanes) {
    __m512 x[C];
    for (int c = 0; c < C; ++c) x[c] = widen16(a[c] + i);
    for (int r = 0; r < R; ++r) {
      const __m512 v = widen16(w[r] + i);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(v, x[c], acc[r][c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* y = job.y + static_cast<size_t>(col + c) * job.y_stride + row;
    for (int r = 0; r < R; ++r) {
      y[r] = reduce_lanes16(_mm512_castps512_ps256(acc[r][c]), _mm512_extractf32x8_ps(acc[r][c], 1));
    }
  }
}

// Every token of the tile against weight rows [row, row + R): the rows' chunks stay in
// L1 while the tokens pass over them.
template <class Values, int R>
void gemm_rows(const TileJob& job, int64_t row) {
  int64_t col = 0;
  for (; col + kBlockCols <= job.n_cols; col += kBlockCols) gemm_block<Values, R, kBlockCols>(job, row, col);
  switch (job.n_cols - col) {
    case 3: gemm_block<Values, R, 3>(job, row, col); break;
    case 2: gemm_block<Values, R, 2>(job, row, col); break;
    case 1: gemm_block<Values, R, 1>(job, row, col); break;
    default: break;
  }
}

template <class Values>
void gemm_lanes16(const TileJob& job) {
  int64_t row = 0;
  for (; row + kBlockRows <= job.n_rows; row += kBlockRows) gemm_rows<Values, kBlockRows>(job, row);
  for (; row < job.n_rows; ++row) gemm_rows<Values, 1>(job, row);
}

// A tile of 16-bit weights and activations (Values::Value each): its activations as f32,
// token after token (TileKernel::widens_activations), then the gemm.
template <class Values>
void gemm_widened(const TileJob& job) {
  using Half = typename Values::Value;
  auto* widened = reinterpret_cast<float*>(job.scratch);
  for (int64_t t = 0; t < job.n_cols; ++t) {
    const auto* a = reinterpret_cast<const Half*>(job.a + static_cast<size_t>(t) * job.a_stride);
    float* out = widened + static_cast<size_t>(t * job.n_in);
    for (int64_t i = 0; i < job.n_in; i += kReferenceGemmLanes) _mm512_storeu_ps(out + i, widen16(a + i));
  }
  TileJob widened_job = job;
  widened_job.a = reinterpret_cast<const std::byte*>(widened);
  widened_job.a_stride = static_cast<size_t>(job.n_in) * sizeof(float);
  gemm_lanes16<Values>(widened_job);
}

}  // namespace

void gemm_f32_lanes16(const TileJob& job) {
  if (job.n_cols <= kStreamTokens) {
    avx2::gemm_f32_lanes16(job);
  } else {
    gemm_lanes16<F32Values>(job);
  }
}

void gemm_f16_lanes16(const TileJob& job) {
  if (job.n_cols <= kStreamTokens) {
    avx2::gemm_f16_lanes16(job);
  } else {
    gemm_widened<F16Values>(job);
  }
}
void gemm_bf16_lanes16(const TileJob& job) {
  if (job.n_cols <= kStreamTokens) {
    avx2::gemm_bf16_lanes16(job);
  } else {
    gemm_widened<BF16Values>(job);
  }
}

}  // namespace pagoda::backend::cpu::avx512
