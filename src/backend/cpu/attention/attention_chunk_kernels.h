#pragma once
// The arithmetic of the chunked (fast, batch-invariant) attention schedule, one function
// per step of attending a block of query rows to one KV chunk (attention_chunked.h has
// the overview).
//
// Every value these kernels produce is defined per query row and position, by a fixed
// sequence of f32 operations that does not depend on how many rows or positions are
// handled together:
//  - a score is q . k as 8 lanes of FMA chains over the dimensions (lane j takes the
//    dimensions i = j mod 8 in ascending order), the lanes summed as
//    ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), the last head_dim % 8 products
//    added by FMA in ascending order, then the sum multiplied by the scale;
//  - the softmax of a row over a chunk: its max, exp(score - max) by softmax_exp below,
//    and the sum of those weights as 8 lanes over the positions (lane j takes the
//    positions p = j mod 8 from the chunk's start), summed by the same tree;
//  - the weighted values: per dimension, one FMA chain over the positions in ascending
//    order, starting from 0;
//  - chunks merged in position order by merge().
// The scalar and the vector kernels perform exactly these operations, so their results
// are bit-identical too.

#include <bit>
#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "core/softmax_exp.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

// Positions per KV chunk; chunk c holds positions [c * kChunkPositions, (c + 1) * kChunkPositions).
inline constexpr int32_t kChunkPositions = 256;

// The softmax of one query row over one chunk (or over several merged chunks).
struct ChunkSoftmax {
  float max;  // largest score
  float sum;  // sum of exp(score - max)
};

struct ChunkKernels {
  // scores[r * kChunkPositions + p] = (q[r] . key p) * scale for r < n_rows, p < n_pos.
  // q: [n_rows][head_dim] f32. keys: n_pos rounded up to a multiple of 8 row pointers
  // (those past n_pos repeat a valid row), each to head_dim values of `type` (F16 or F32).
  // Positions past n_pos in a row of scores may be written too (up to the multiple of 8).
  // values: the V rows of the same positions, which the kernel may fetch into the cache
  // ahead of the weighted sum (rows of the cache are scattered over its blocks, so the
  // hardware prefetcher cannot follow them).
  void (*scores)(const float* q, int32_t n_rows, const void* const* keys, const void* const* values,
                 DType type, int32_t n_pos, int32_t head_dim, float scale, float* scores);
  // Over row[0, count) (count >= 1): row[p] = softmax_exp(row[p] - max); returns the max
  // and the sum of the weights. Leaves row[count, count rounded up to 8) zero.
  ChunkSoftmax (*softmax)(float* row, int32_t count);
  // o[r][i] = chain of fma(w[r * kChunkPositions + p], value p [i], o[r][i]) over
  // p = p_begin, ..., p_end - 1, for r < n_rows and i < head_dim. o: [n_rows][head_dim].
  void (*accumulate_values)(const float* w, int32_t n_rows, const void* const* values, DType type,
                            int32_t p_begin, int32_t p_end, int32_t head_dim, float* o);
  // Folds a later chunk's (part_o, part) into the running (acc_o, acc): with m the larger
  // max, a = softmax_exp(acc.max - m), b = softmax_exp(part.max - m):
  // acc_o[i] = fma(part_o[i], b, acc_o[i] * a), acc.sum = fma(part.sum, b, acc.sum * a).
  void (*merge)(float* acc_o, ChunkSoftmax* acc, const float* part_o, ChunkSoftmax part,
                int32_t head_dim);
  // y[i] = x[i] * v.
  void (*scale_into)(const float* x, float v, float* y, int32_t n);
  // The n values (a multiple of 32) of a q8_0 row to f32, bit-exact with quant::dequantize_row.
  void (*dequantize_q8_0)(const void* row, float* out, int32_t n);
};

// The kernels for `isa`: the portable ones, the AVX2 vector kernels, or the same vector
// kernels in wider tiles for AVX-512 (and AVX-512 VNNI). All give the same bits.
const ChunkKernels& chunk_kernels(Isa isa);

namespace avx2 {
extern const ChunkKernels kChunkKernels;
}
namespace avx512 {
extern const ChunkKernels kChunkKernels;
}

// --- exp of the softmax weights ------------------------------------------------------
// softmax_exp (core/softmax_exp.h): exp(x) for x <= 0 in a fixed sequence of f32
// operations that the vector kernels repeat lane by lane.

}  // namespace pagoda::backend::cpu
