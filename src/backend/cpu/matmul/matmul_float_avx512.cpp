// The fast float gemm (see matmul_float.h) on AVX-512: the blocks of
// matmul_float_gemm_avx512.h with each type's chunk: lane for lane the arithmetic of the
// AVX2 kernel (matmul_float_avx2.cpp, whose two 8-lane halves are this register's
// halves), so the same bits, with half the multiply-adds and conversions. Tiles of few
// tokens run the AVX2 kernel (kStreamTokens).

#include "backend/cpu/matmul/matmul_float_gemm_avx512.h"

namespace pagoda::backend::cpu::avx512 {
namespace {

// Tiles of at most this many tokens stream their rows from memory: the AVX2 kernel (its
// rows asked for ahead) reads them as fast or faster; past it the multiply-adds and
// conversions bound a tile, and here they take half the instructions.
constexpr int64_t kStreamTokens = 4;

// Lane l fuses value l of every 16-value chunk.
struct F32Values {
  using Value = float;
  using Activation = float;
  using WeightChunk = __m512;
  using ActivationChunk = __m512;
  static constexpr int64_t kChunk = kReferenceGemmLanes;
  static constexpr int kBlockCols = 6;
  static __m512 load_weights(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load_activations(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 fuse(__m512 w, __m512 a, __m512 acc) { return _mm512_fmadd_ps(w, a, acc); }
};
// F16 weights against their f16-rounded activations, both widened as they are loaded
// (exactly: every f16 value is an f32 value). Widening the activations once per tile
// into scratch instead cost more than the conversions it saved: a tile of long rows
// holds few tokens, and its scratch outgrew L2.
struct F16Values : F32Values {
  using Value = uint16_t;
  using Activation = uint16_t;
  static __m512 load_weights(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load_activations(const uint16_t* p) { return load_weights(p); }
};
// BF16 pairs (kBf16PairChunk) where the CPU lacks the BF16 dot-product instruction: 32
// values a chunk, lane l fusing value 2 l + 1 then 2 l, with denormals flushed for the
// whole tile. A pair's 32 bits hold the even value in their low half: the odd one as
// f32 is those bits masked, the even one them shifted up.
struct BF16Pairs {
  using Value = uint16_t;
  using Activation = uint16_t;
  struct Chunk {
    __m512 odd, even;
  };
  using WeightChunk = Chunk;
  using ActivationChunk = Chunk;
  static constexpr int64_t kChunk = 2 * kReferenceGemmLanes;
  static constexpr int kBlockCols = 4;
  static Chunk load_weights(const uint16_t* p) {
    const __m512i pairs = _mm512_loadu_si512(p);
    return {_mm512_castsi512_ps(_mm512_and_si512(pairs, _mm512_set1_epi32(static_cast<int>(0xffff0000u)))),
            _mm512_castsi512_ps(_mm512_slli_epi32(pairs, 16))};
  }
  static Chunk load_activations(const uint16_t* p) { return load_weights(p); }
  static __m512 fuse(const Chunk& w, const Chunk& a, __m512 acc) {
    return _mm512_fmadd_ps(w.even, a.even, _mm512_fmadd_ps(w.odd, a.odd, acc));
  }
};

}  // namespace

void gemm_f32_lanes16(const TileJob& job) {
  if (job.n_cols <= kStreamTokens) {
    avx2::gemm_f32_lanes16(job);
  } else {
    gemm_tile_avx512<F32Values>(job);
  }
}

void gemm_f16_lanes16(const TileJob& job) {
  if (job.n_cols <= kStreamTokens) {
    avx2::gemm_f16_lanes16(job);
  } else {
    gemm_tile_avx512<F16Values>(job);
  }
}

void gemm_bf16_pairs(const TileJob& job) {
  if (job.n_cols <= kStreamTokens) {
    avx2::gemm_bf16_pairs(job);
  } else {
    const DenormalsFlushed flushed;
    gemm_tile_avx512<BF16Pairs>(job);
  }
}

}  // namespace pagoda::backend::cpu::avx512
