// BF16 pairs (kBf16PairChunk, matmul_float.h) on the BF16 dot-product instruction, the
// arithmetic the AVX2 and AVX-512 BF16 kernels reproduce: vdpbf16ps fuses into lane l
// the product of value 2 l + 1, then that of value 2 l, each rounded, with denormals
// flushed whatever MXCSR says; the tile's lane reduction runs with denormals flushed, as
// theirs does. Twice the multiply-adds of an FMA per instruction, and no widening.

#include "backend/cpu/matmul/matmul_float_gemm_avx512.h"

namespace pagoda::backend::cpu::avx512bf16 {
namespace {

struct BF16Dots {
  using Value = uint16_t;
  using Activation = uint16_t;
  using WeightChunk = __m512bh;
  using ActivationChunk = __m512bh;
  static constexpr int64_t kChunk = kBf16PairChunk;
  static constexpr int kBlockCols = 6;
  static __m512bh load_weights(const uint16_t* p) { return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p)); }
  static __m512bh load_activations(const uint16_t* p) { return load_weights(p); }
  static __m512 fuse(__m512bh w, __m512bh a, __m512 acc) { return _mm512_dpbf16_ps(acc, w, a); }
};

}  // namespace

void gemm_bf16_pairs(const TileJob& job) {
  const DenormalsFlushed flushed;
  gemm_tile_avx512<BF16Dots>(job);
}

}  // namespace pagoda::backend::cpu::avx512bf16
