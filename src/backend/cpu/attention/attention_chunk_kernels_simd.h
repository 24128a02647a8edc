#pragma once
// The vector chunk kernels (AVX2 + FMA + F16C operations on 8-float vectors): register
// tiles of several rows and positions (scores) or rows and dimensions (weighted values),
// each element computed by exactly the operations of attention_chunk_kernels.h, as the
// portable kernels do. Include from *_avx2.cpp and *_avx512.cpp files only: everything
// here has internal linkage, so each includer compiles its own copy for its instruction
// set. Those TUs differ only in kRows, the query rows of a tile: AVX-512's 32 vector
// registers hold twice the rows of AVX2's 16, so each K or V row loaded (and converted
// from f16) serves twice the rows; every element still sees the same operations.

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

#include "backend/cpu/attention/attention_chunk_kernels.h"
#include "core/softmax_exp_avx2.h"
#include "quant/blocks.h"

// Each product and sum rounds on its own unless written as an FMA (the two kernel sets
// must round alike): no contraction.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::backend::cpu::chunk_simd {
namespace {

inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline float load1(const float* p) {
  return *p;
}
inline float load1(const uint16_t* p) {
  return _cvtsh_ss(*p);
}

// The lane sum ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)) of four vectors at once.
inline __m128 sum_lanes4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
// The same for one vector.
inline float sum_lanes(__m256 v) {
  const __m256 pairs = _mm256_hadd_ps(v, v);
  const __m256 quads = _mm256_hadd_ps(pairs, pairs);
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quads), _mm256_extractf128_ps(quads, 1)));
}

// Cache rows are scattered over the blocks of the cache, so the hardware prefetcher
// cannot follow them: each position's row is fetched this many positions ahead, into L2
// (_MM_HINT_T1). Into L1 the requests wait on its few miss buffers: decoding many
// sequences from a cache in DRAM (attention_bench decode16/f16) took about twice as long
// that way (8, 24, 32 and 64 positions ahead, or T2, were slower than 16).
constexpr int32_t kPrefetchPositions = 16;

inline void prefetch_row(const void* row, int32_t bytes) {
  for (int32_t b = 0; b < bytes; b += 64)
    _mm_prefetch(static_cast<const char*>(row) + b, _MM_HINT_T1);
}

// Lanes [0, n) set, for the last partial group of 8.
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// --- scores ---------------------------------------------------------------------------

// Scores of R rows x P positions (P a multiple of 4), all in registers across head_dim.
template <typename T, int R, int P>
void score_tile(const float* q, const T* const* keys, int32_t head_dim, float scale, float* out) {
  __m256 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm256_setzero_ps();
  const int32_t full = head_dim & ~7;
  for (int32_t i = 0; i < full; i += 8) {
    __m256 qv[R];
    for (int r = 0; r < R; ++r) qv[r] = _mm256_loadu_ps(q + r * head_dim + i);
    for (int p = 0; p < P; ++p) {
      const __m256 kv = load8(keys[p] + i);
      for (int r = 0; r < R; ++r) acc[r][p] = _mm256_fmadd_ps(qv[r], kv, acc[r][p]);
    }
  }
  const __m128 scale4 = _mm_set1_ps(scale);
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; p += 4) {
      __m128 sums = sum_lanes4(acc[r][p], acc[r][p + 1], acc[r][p + 2], acc[r][p + 3]);
      if (full < head_dim) {  // the last head_dim % 8 products, in order
        alignas(16) float s[4];
        _mm_store_ps(s, sums);
        for (int j = 0; j < 4; ++j) {
          for (int32_t i = full; i < head_dim; ++i) {
            s[j] =
                _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(q[r * head_dim + i]),
                                           _mm_set_ss(load1(keys[p + j] + i)), _mm_set_ss(s[j])));
          }
        }
        sums = _mm_load_ps(s);
      }
      _mm_storeu_ps(out + r * kChunkPositions + p, _mm_mul_ps(sums, scale4));
    }
  }
}

// Fetches the K and V rows of positions [begin, end) (V for the weighted sum that follows
// the scores of the chunk).
inline void prefetch_rows(const void* const* keys, const void* const* values, int32_t begin,
                          int32_t end, int32_t row_bytes) {
  for (int32_t p = begin; p < end; ++p) {
    prefetch_row(keys[p], row_bytes);
    prefetch_row(values[p], row_bytes);
  }
}

// Rows [0, n_rows) (at most R) of a score tile: one tile of as many rows.
template <typename T, int R>
void score_rest(const float* q, int32_t n_rows, const T* const* k, int32_t head_dim, float scale, float* out) {
  if constexpr (R > 1) {
    if (n_rows < R) return score_rest<T, R - 1>(q, n_rows, k, head_dim, scale, out);
  }
  score_tile<T, R, 4>(q, k, head_dim, scale, out);
}

// Positions in the outer loop: each group of K rows serves every row while in L1. Tiles
// of kRows rows, the last one narrower.
template <int kRows, typename T>
void scores_typed(const float* q, int32_t n_rows, const void* const* keys,
                  const void* const* values, int32_t n_pos, int32_t head_dim, float scale,
                  float* out) {
  const T* const* k = reinterpret_cast<const T* const*>(keys);
  const int32_t row_bytes = head_dim * static_cast<int32_t>(sizeof(T));
  prefetch_rows(keys, values, 0, std::min(kPrefetchPositions, n_pos), row_bytes);
  const int32_t step = n_rows == 1 ? 8 : 4;  // one row: 8 positions at a time for enough chains
  for (int32_t p = 0; p < n_pos; p += step) {
    prefetch_rows(keys, values, std::min(p + kPrefetchPositions, n_pos),
                  std::min(p + kPrefetchPositions + step, n_pos), row_bytes);
    if (n_rows == 1) {
      score_tile<T, 1, 8>(q, k + p, head_dim, scale, out + p);
      continue;
    }
    for (int32_t r = 0; r < n_rows; r += kRows) {
      score_rest<T, kRows>(q + r * head_dim, std::min(kRows, n_rows - r), k + p, head_dim, scale,
                           out + r * kChunkPositions + p);
    }
  }
}

template <int kRows>
void scores(const float* q, int32_t n_rows, const void* const* keys, const void* const* values,
            DType type, int32_t n_pos, int32_t head_dim, float scale, float* out) {
  if (type == DType::F16) {
    scores_typed<kRows, uint16_t>(q, n_rows, keys, values, n_pos, head_dim, scale, out);
  } else {
    scores_typed<kRows, float>(q, n_rows, keys, values, n_pos, head_dim, scale, out);
  }
}

// --- softmax --------------------------------------------------------------------------

ChunkSoftmax softmax(float* row, int32_t count) {
  const int32_t full = count & ~7, rest = count - full;
  const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 lanes = minus_inf;
  for (int32_t p = 0; p < full; p += 8) lanes = _mm256_max_ps(_mm256_loadu_ps(row + p), lanes);
  const __m256i tail_mask = first_lanes(rest);
  if (rest > 0)
    lanes = _mm256_max_ps(_mm256_blendv_ps(minus_inf, _mm256_maskload_ps(row + full, tail_mask),
                                           _mm256_castsi256_ps(tail_mask)),
                          lanes);
  const __m128 half = _mm_max_ps(_mm256_extractf128_ps(lanes, 1), _mm256_castps256_ps128(lanes));
  const __m128 quarter = _mm_max_ps(_mm_movehl_ps(half, half), half);
  const float max = _mm_cvtss_f32(_mm_max_ss(_mm_shuffle_ps(quarter, quarter, 1), quarter));

  const __m256 max8 = _mm256_set1_ps(max);
  __m256 sums = _mm256_setzero_ps();
  for (int32_t p = 0; p < full; p += 8) {
    const __m256 w = softmax_exp8(_mm256_sub_ps(_mm256_loadu_ps(row + p), max8));
    _mm256_storeu_ps(row + p, w);
    sums = _mm256_add_ps(sums, w);
  }
  if (rest > 0) {
    const __m256 w =
        _mm256_and_ps(softmax_exp8(_mm256_sub_ps(_mm256_maskload_ps(row + full, tail_mask), max8)),
                      _mm256_castsi256_ps(tail_mask));
    _mm256_storeu_ps(row + full, w);
    sums = _mm256_add_ps(sums, w);
  }
  return {max, sum_lanes(sums)};
}

// --- weighted values ------------------------------------------------------------------

// Rows [0, R) x dimensions [first_dim, first_dim + 8 * V) of o += w v, in registers
// across the positions [p_begin, p_end) (not empty: written as a do-while, which GCC
// keeps in registers where it spills the accumulators of a loop that may not run).
template <typename T, int R, int V>
void value_tile(const float* w, const T* const* values, int32_t p_begin, int32_t p_end,
                int32_t head_dim, int32_t first_dim, float* o) {
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_loadu_ps(o + r * head_dim + first_dim + 8 * v);
  int32_t p = p_begin;
  do {
    __m256 weight[R];
    for (int r = 0; r < R; ++r) weight[r] = _mm256_broadcast_ss(w + r * kChunkPositions + p);
    const T* row = values[p] + first_dim;
    for (int v = 0; v < V; ++v) {
      const __m256 x = load8(row + 8 * v);
      for (int r = 0; r < R; ++r) acc[r][v] = _mm256_fmadd_ps(weight[r], x, acc[r][v]);
    }
  } while (++p < p_end);
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(o + r * head_dim + first_dim + 8 * v, acc[r][v]);
}

template <typename T, int R>
void value_rows(const float* w, const T* const* values, int32_t p_begin, int32_t p_end,
                int32_t head_dim, float* o) {
  constexpr int kWide = R == 1 ? 8 : 4;  // vectors per tile: enough independent chains
  int32_t i = 0;
  for (; i + 8 * kWide <= head_dim; i += 8 * kWide)
    value_tile<T, R, kWide>(w, values, p_begin, p_end, head_dim, i, o);
  if (kWide == 8 && i + 32 <= head_dim) {
    value_tile<T, R, 4>(w, values, p_begin, p_end, head_dim, i, o);
    i += 32;
  }
  if (i + 16 <= head_dim) {
    value_tile<T, R, 2>(w, values, p_begin, p_end, head_dim, i, o);
    i += 16;
  }
  if (i + 8 <= head_dim) {
    value_tile<T, R, 1>(w, values, p_begin, p_end, head_dim, i, o);
    i += 8;
  }
  for (; i < head_dim; ++i) {  // the last head_dim % 8 dimensions
    for (int r = 0; r < R; ++r) {
      __m128 acc = _mm_set_ss(o[r * head_dim + i]);
      for (int32_t p = p_begin; p < p_end; ++p) {
        acc = _mm_fmadd_ss(_mm_set_ss(w[r * kChunkPositions + p]), _mm_set_ss(load1(values[p] + i)),
                           acc);
      }
      o[r * head_dim + i] = _mm_cvtss_f32(acc);
    }
  }
}

// Rows [0, n_rows) (at most R) of weighted values: one tile of as many rows.
template <typename T, int R>
void value_rest(const float* w, int32_t n_rows, const T* const* values, int32_t p_begin, int32_t p_end,
                int32_t head_dim, float* o) {
  if constexpr (R > 1) {
    if (n_rows < R) return value_rest<T, R - 1>(w, n_rows, values, p_begin, p_end, head_dim, o);
  }
  value_rows<T, R>(w, values, p_begin, p_end, head_dim, o);
}

template <int kRows, typename T>
void accumulate_typed(const float* w, int32_t n_rows, const T* const* values, int32_t p_begin,
                      int32_t p_end, int32_t head_dim, float* o) {
  for (int32_t r = 0; r < n_rows; r += kRows) {
    value_rest<T, kRows>(w + r * kChunkPositions, std::min(kRows, n_rows - r), values, p_begin, p_end,
                         head_dim, o + r * head_dim);
  }
}

template <int kRows>
void accumulate_values(const float* w, int32_t n_rows, const void* const* values, DType type,
                       int32_t p_begin, int32_t p_end, int32_t head_dim, float* o) {
  if (p_begin >= p_end) return;
  if (type == DType::F16) {
    accumulate_typed<kRows>(w, n_rows, reinterpret_cast<const uint16_t* const*>(values), p_begin,
                            p_end, head_dim, o);
  } else {
    accumulate_typed<kRows>(w, n_rows, reinterpret_cast<const float* const*>(values), p_begin, p_end,
                            head_dim, o);
  }
}

// --- merging and normalizing ----------------------------------------------------------

void merge(float* acc_o, ChunkSoftmax* acc, const float* part_o, ChunkSoftmax part,
           int32_t head_dim) {
  const float max = acc->max > part.max ? acc->max : part.max;
  const float a = softmax_exp(acc->max - max), b = softmax_exp(part.max - max);
  const __m256 a8 = _mm256_set1_ps(a), b8 = _mm256_set1_ps(b);
  int32_t i = 0;
  for (; i + 8 <= head_dim; i += 8) {
    _mm256_storeu_ps(acc_o + i, _mm256_fmadd_ps(_mm256_loadu_ps(part_o + i), b8,
                                                _mm256_mul_ps(_mm256_loadu_ps(acc_o + i), a8)));
  }
  for (; i < head_dim; ++i) acc_o[i] = std::fma(part_o[i], b, acc_o[i] * a);
  acc->sum = std::fma(part.sum, b, acc->sum * a);
  acc->max = max;
}

void scale_into(const float* x, float v, float* y, int32_t n) {
  const __m256 v8 = _mm256_set1_ps(v);
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), v8));
  for (; i < n; ++i) y[i] = x[i] * v;
}

void dequantize_q8_0(const void* row, float* out, int32_t n) {
  const auto* blocks = static_cast<const std::byte*>(row);
  for (int32_t b = 0; b < n / quant::kQK; ++b, out += quant::kQK) {
    const std::byte* block = blocks + b * sizeof(quant::BlockQ8_0);
    uint16_t scale;
    std::memcpy(&scale, block + offsetof(quant::BlockQ8_0, d), sizeof(scale));
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(scale));
    const __m256i q = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(block + offsetof(quant::BlockQ8_0, qs)));
    const __m128i halves[2] = {_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1)};
    for (int h = 0; h < 2; ++h) {
      const __m256i low = _mm256_cvtepi8_epi32(halves[h]),
                    high = _mm256_cvtepi8_epi32(_mm_srli_si128(halves[h], 8));
      _mm256_storeu_ps(out + 16 * h, _mm256_mul_ps(_mm256_cvtepi32_ps(low), d));
      _mm256_storeu_ps(out + 16 * h + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(high), d));
    }
  }
}

// The kernel set of tiles of kRows query rows.
template <int kRows>
constexpr ChunkKernels kernels_of_rows() {
  return {scores<kRows>, softmax, accumulate_values<kRows>, merge, scale_into, dequantize_q8_0};
}

}  // namespace
}  // namespace pagoda::backend::cpu::chunk_simd
