#pragma once
// The reference build's gemm for float weights (F32, and F16 against activations first
// rounded to f16), for batches of several tokens. Each output keeps one 16-lane f32
// accumulator (the reference's AVX-512 vector, held here as two 8-lane halves): value i
// of the row is fused into lane i % 16, chunk after chunk of 16 values, so each lane sums
// n_in / 16 products in order; then the lanes are added in the tree of an AVX-512
// horizontal sum:
//   s[i] = lane[i] + lane[i + 8]       (i < 8)
//   t[i] = s[i] + s[i + 4]             (i < 4)
//   y    = (t[0] + t[2]) + (t[1] + t[3])
// A single token (and shapes the reference's gemm declines) goes through its vector dot
// products instead: the quant layer's dot_f32 / dot_f16, in their own order.

#include <cstdint>

#include "backend/cpu/matmul/matmul_tiles.h"
#include "core/dtype.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

// Values per accumulator chunk (f32 lanes of the reference's vector); rows must be a
// multiple of it.
inline constexpr int64_t kReferenceGemmLanes = 16;
// The reference's gemm computes 4 weight rows at a time and declines other row counts.
inline constexpr int64_t kReferenceGemmRowMultiple = 4;
// It only runs for batches: a single token takes the vector dot products.
inline constexpr int64_t kReferenceGemmMinTokens = 2;

// BF16 weights (fast numerics only; the reference takes them row by row) multiply
// activations rounded to bf16 in the arithmetic of the BF16 dot-product instruction
// (vdpbf16ps), on CPUs that have it and, the same bits, on those that do not: each
// output's 16-lane accumulator takes chunks of kBf16PairChunk values, lane l fusing the
// product of value 2 l + 1, then that of value 2 l (each product exact in f32, each sum
// rounded), with denormals read as zero and results that would be denormal written as
// zero; the lanes are then added in the tree above, denormals still flushed. Rows must
// be a multiple of the chunk.
inline constexpr int64_t kBf16PairChunk = 32;

// The tiled kernel that rounds as the reference's gemm does for a float matmul of this
// shape (w: [n_out][n_in], n_tokens activation rows), or nullptr where the reference
// itself takes its row-by-row dot products (one token, n_in % 16 != 0, n_out % 4 != 0),
// where the weight type is not F32 or F16, or on the scalar ISA.
const TileKernel* find_reference_float_tile(DType weight, Isa isa, int64_t n_in, int64_t n_out,
                                            int64_t n_tokens);

// Under fast numerics, the same kernels for every number of tokens, one included (so that
// a token's result does not depend on its batch): a weight chunk is widened once for
// several tokens instead of once per token. nullptr where n_in % 16 != 0 (BF16:
// n_in % kBf16PairChunk != 0), the type is not F32, F16 or BF16, or on the scalar ISA.
// BF16 on AVX-512 takes the BF16 dot products where cpu_features() has them.
const TileKernel* find_fast_float_tile(DType weight, Isa isa, int64_t n_in);

namespace avx2 {
// TileJob over F32 weights and F32 activations / F16 weights and F16 activations;
// job.n_in a multiple of kReferenceGemmLanes; any number of rows and tokens.
void gemm_f32_lanes16(const TileJob& job);
void gemm_f16_lanes16(const TileJob& job);
// BF16 weights and BF16 activations; job.n_in a multiple of kBf16PairChunk.
void gemm_bf16_pairs(const TileJob& job);
}  // namespace avx2

// The same on AVX-512 (matmul_float_avx512.cpp): the same bits, each accumulator one
// register; the fast numerics' kernels where the CPU has it (tiles of up to 4 tokens go
// on to the AVX2 ones).
namespace avx512 {
void gemm_f32_lanes16(const TileJob& job);
void gemm_f16_lanes16(const TileJob& job);
void gemm_bf16_pairs(const TileJob& job);
}  // namespace avx512

// BF16 on the BF16 dot-product instruction (matmul_float_avx512bf16.cpp), the same bits.
namespace avx512bf16 {
void gemm_bf16_pairs(const TileJob& job);
}  // namespace avx512bf16

}  // namespace pagoda::backend::cpu
