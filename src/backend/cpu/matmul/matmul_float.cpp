#include "backend/cpu/matmul/matmul_float.h"

#include "core/cpu_features.h"

namespace pagoda::backend::cpu {

const TileKernel* find_reference_float_tile(DType weight, Isa isa, int64_t n_in, int64_t n_out,
                                            int64_t n_tokens) {
  // Every result of these kernels is the reference's: no block sums, any row count.
  static constexpr TileKernel kF32{avx2::gemm_f32_lanes16, false, true, false};
  static constexpr TileKernel kF16{avx2::gemm_f16_lanes16, false, true, false};
  if (isa == Isa::kScalar) return nullptr;  // every ISA above scalar runs AVX2
  if (n_tokens < kReferenceGemmMinTokens || n_in % kReferenceGemmLanes != 0 ||
      n_out % kReferenceGemmRowMultiple != 0) {
    return nullptr;
  }
  switch (weight) {
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    default: return nullptr;
  }
}

const TileKernel* find_fast_float_tile(DType weight, Isa isa, int64_t n_in) {
  static constexpr TileKernel kF32{avx2::gemm_f32_lanes16, false, false, false};
  static constexpr TileKernel kF16{avx2::gemm_f16_lanes16, false, false, false};
  static constexpr TileKernel kF32Avx512{avx512::gemm_f32_lanes16, false, false, false};
  static constexpr TileKernel kF16Avx512{avx512::gemm_f16_lanes16, false, false, false};
  static constexpr TileKernel kBF16{avx2::gemm_bf16_pairs, false, false, false};
  static constexpr TileKernel kBF16Avx512{avx512::gemm_bf16_pairs, false, false, false};
  static constexpr TileKernel kBF16Dots{avx512bf16::gemm_bf16_pairs, false, false, false};
  if (isa == Isa::kScalar || n_in % kReferenceGemmLanes != 0) return nullptr;
  const bool avx512 = isa >= Isa::kAvx512;
  switch (weight) {
    case DType::F32: return avx512 ? &kF32Avx512 : &kF32;
    case DType::F16: return avx512 ? &kF16Avx512 : &kF16;
    case DType::BF16:
      if (n_in % kBf16PairChunk != 0) return nullptr;
      if (!avx512) return &kBF16;
      return cpu_features().avx512_bf16 ? &kBF16Dots : &kBF16Avx512;
    default: return nullptr;
  }
}

}  // namespace pagoda::backend::cpu
