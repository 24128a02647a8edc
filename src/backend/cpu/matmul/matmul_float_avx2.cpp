// The reference's float gemm (see matmul_float.h) on AVX2: each output's 16-lane
// accumulator is a pair of 8-lane halves, value i of every 16-value chunk fused into
// lane i (low half: values 0..7, high half: 8..15), then the halves added lane by lane
// and the 8 sums reduced as the reference's AVX-512 horizontal sum reduces them. Fused
// multiply-adds round once per product, as the reference's do, so every output is bit
// for bit the reference's. 2 weight rows x 2 tokens per block: 8 accumulators, and each
// chunk loaded (F16: widened) once for two dot products. BF16 weights take the BF16
// dot-product instruction's arithmetic instead (kBf16PairChunk, matmul_float.h).

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "backend/cpu/matmul/matmul_float.h"
#include "backend/cpu/matmul/matmul_float_lanes.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

constexpr int kBlockRows = 2;
constexpr int kBlockCols = 2;
// Tiles of at most this many tokens read their rows once, as a stream.
constexpr int64_t kStreamTokens = 4;
// Values of a weight row per 64-byte line: one prefetch per line and row.
template <typename Value>
constexpr int64_t kValuesPerLine = 64 / static_cast<int64_t>(sizeof(Value));

// Each type's policy: kChunk values of a row (weights or activations alike) loaded as a
// Chunk, and a weight chunk fused with an activation chunk into an output's accumulator
// halves (lanes [0, 8) and [8, 16)).
template <class Load>
struct Lanes16 {
  using Value = typename Load::Value;
  static constexpr int64_t kChunk = kReferenceGemmLanes;
  struct Chunk {
    __m256 low, high;  // values 0..7, 8..15
  };
  static Chunk load(const Value* p) { return {Load::load8(p), Load::load8(p + 8)}; }
  static void fuse(const Chunk& w, const Chunk& a, __m256& low, __m256& high) {
    low = _mm256_fmadd_ps(w.low, a.low, low);
    high = _mm256_fmadd_ps(w.high, a.high, high);
  }
};
struct F32Load {
  using Value = float;
  static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
};
struct F16Load {
  using Value = uint16_t;
  static __m256 load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
using F32Values = Lanes16<F32Load>;
using F16Values = Lanes16<F16Load>;

// BF16 weights against activations rounded to bf16 (the quant layer's convert_row_bf16),
// kBf16PairChunk's arithmetic: 32 values a chunk, lane l fusing the pair (2 l, 2 l + 1),
// the odd value first, with denormals flushed. A pair's 32 bits hold the even value in
// their low half: the odd one as f32 is those bits masked, the even one them shifted up.
struct BF16Pairs {
  using Value = uint16_t;
  static constexpr int64_t kChunk = 2 * kReferenceGemmLanes;
  struct Chunk {
    __m256 low_odd, low_even, high_odd, high_even;  // pairs 0..7, 8..15
  };
  static Chunk load(const uint16_t* p) {
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
    const __m256i odd = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
    return {_mm256_castsi256_ps(_mm256_and_si256(low, odd)), _mm256_castsi256_ps(_mm256_slli_epi32(low, 16)),
            _mm256_castsi256_ps(_mm256_and_si256(high, odd)), _mm256_castsi256_ps(_mm256_slli_epi32(high, 16))};
  }
  static void fuse(const Chunk& w, const Chunk& a, __m256& low, __m256& high) {
    low = _mm256_fmadd_ps(w.low_odd, a.low_odd, low);
    high = _mm256_fmadd_ps(w.high_odd, a.high_odd, high);
    low = _mm256_fmadd_ps(w.low_even, a.low_even, low);
    high = _mm256_fmadd_ps(w.high_even, a.high_even, high);
  }
};

// Outputs of weight rows [row, row + R) x tokens [col, col + C) of the tile.
template <class Values, int R, int C>
void gemm_block(const TileJob& job, int64_t row, int64_t col) {
  using Value = typename Values::Value;
  using Chunk = typename Values::Chunk;
  const BlockOperands<Value, Value, R, C> in(job, row, col);
  const auto& w = in.w;
  const auto& a = in.a;
  __m256 low[R][C], high[R][C];  // lanes [0, 8) and [8, 16) of each output's accumulator
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) low[r][c] = high[r][c] = _mm256_setzero_ps();
  }
  // Few tokens: the rows stream from memory, faster than the hardware prefetcher asks
  // for them; the bytes ahead are asked for into L1 and L2 (matmul_tiles.h's distances;
  // rows lie one after another, so past a row's end they are the next rows').
  const bool stream = job.n_cols <= kStreamTokens;
  for (int64_t i = 0; i < job.n_in; i += Values::kChunk) {
    if (stream && i % kValuesPerLine<Value> == 0) {
      for (int r = 0; r < R; ++r) {
        const char* p = reinterpret_cast<const char*>(w[r] + i);
        _mm_prefetch(p + kRowPrefetchBytes, _MM_HINT_T0);
        _mm_prefetch(p + kL2RowPrefetchBytes, _MM_HINT_T1);
      }
    }
    Chunk x[C];
    for (int c = 0; c < C; ++c) x[c] = Values::load(a[c] + i);
    for (int r = 0; r < R; ++r) {
      const Chunk v = Values::load(w[r] + i);
      for (int c = 0; c < C; ++c) Values::fuse(v, x[c], low[r][c], high[r][c]);
    }
  }
  for (int c = 0; c < C; ++c) {
    float* y = job.y + static_cast<size_t>(col + c) * job.y_stride + row;
    for (int r = 0; r < R; ++r) y[r] = reduce_lanes16(low[r][c], high[r][c]);
  }
}

// Every token of the tile against weight rows [row, row + R): the rows' chunks stay in
// L1 while the tokens pass over them.
template <class Values, int R>
void gemm_rows(const TileJob& job, int64_t row) {
  int64_t col = 0;
  for (; col + kBlockCols <= job.n_cols; col += kBlockCols) gemm_block<Values, R, kBlockCols>(job, row, col);
  for (; col < job.n_cols; ++col) gemm_block<Values, R, 1>(job, row, col);
}

// A single token reads its rows one after another: one stream from memory, which the
// prefetches and the hardware keep up with better than with rows read side by side.
template <class Values>
void gemm_lanes16(const TileJob& job) {
  int64_t row = 0;
  if (job.n_cols > 1) {
    for (; row + kBlockRows <= job.n_rows; row += kBlockRows) gemm_rows<Values, kBlockRows>(job, row);
  }
  for (; row < job.n_rows; ++row) gemm_rows<Values, 1>(job, row);
}

}  // namespace

void gemm_f32_lanes16(const TileJob& job) { gemm_lanes16<F32Values>(job); }
void gemm_f16_lanes16(const TileJob& job) { gemm_lanes16<F16Values>(job); }
void gemm_bf16_pairs(const TileJob& job) {
  const DenormalsFlushed flushed;
  gemm_lanes16<BF16Pairs>(job);
}

}  // namespace pagoda::backend::cpu::avx2
