// The reference numerics mode's tiled schedule for long prompts: 64 queries x 64
// positions at a time, f32 scores from a small GEMM, per-row online softmax across tiles,
// f32 V accumulator; the arithmetic of the reference build's tiled flash attention.

#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/attention/attention.h"
#include "backend/cpu/attention/attention_impl.h"

namespace pagoda::backend::cpu {
namespace {

constexpr int kTile = Attention::kTileQueries;  // queries per tile, and positions per KV tile
constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// Scratch layout, in floats: Q [kTile][d], K^T [d][kTile], scores [kTile][kTile],
// V [kTile][d], accumulator [kTile][d], max [kTile], sum [kTile], one K row [d].
struct TileScratch {
  float *q, *kt, *scores, *v, *acc, *max, *sum, *key_row;
};

TileScratch split_scratch(std::byte* base, int32_t head_dim) {
  float* f = reinterpret_cast<float*>(base);
  const size_t qd = static_cast<size_t>(kTile) * head_dim;
  TileScratch s;
  s.q = f;
  s.kt = s.q + qd;
  s.scores = s.kt + qd;
  s.v = s.scores + kTile * kTile;
  s.acc = s.v + qd;
  s.max = s.acc + qd;
  s.sum = s.max + kTile;
  s.key_row = s.sum + kTile;
  return s;
}

// exp(x - max) in place over a row of kTile scores; returns their sum, added in double
// over float sums of 8 (the reference's vectorized softmax adds in that order).
double softmax_row(float* x, float max) {
  double sum = 0.0;
  for (int g = 0; g < kTile; g += 8) {
    float* v = x + g;
    for (int i = 0; i < 8; ++i) v[i] = std::exp(v[i] - max);
    const float s = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
    sum += static_cast<double>(s);
  }
  return sum;
}

void row_to_f32(const AttentionContext& c, const std::byte* src, float* dst) {
  if (c.cache_type == DType::F16) {
    c.kernels->f16_to_f32(reinterpret_cast<const uint16_t*>(src), dst, c.head_dim);
  } else {
    std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(c.head_dim));
  }
}

// Loads positions [first, first + count) of one KV head as f32: K transposed into
// kt[d][kTile], V into v[kTile][d]; the rest of the tile is zero.
void load_kv_tile(const AttentionContext& c, const SequenceAttention& seq, int32_t kv_head,
                  int64_t first, int count, const TileScratch& s) {
  const int32_t d = c.head_dim;
  std::memset(s.kt, 0, sizeof(float) * static_cast<size_t>(d) * kTile);
  std::memset(s.v, 0, sizeof(float) * static_cast<size_t>(d) * kTile);
  for (int t = 0; t < count; ++t) {
    const int64_t slot = c.slot(seq, first + t);
    row_to_f32(c, c.value(slot, kv_head), s.v + static_cast<size_t>(t) * d);
    row_to_f32(c, c.key(slot, kv_head), s.key_row);
    for (int32_t i = 0; i < d; ++i) s.kt[static_cast<size_t>(i) * kTile + t] = s.key_row[i];
  }
}

}  // namespace

size_t tiled_scratch_bytes(int32_t head_dim) {
  return sizeof(float) * (4 * static_cast<size_t>(kTile) * head_dim + kTile * kTile + 2 * kTile + head_dim);
}

void attend_tile(const AttentionContext& c, const SequenceAttention& seq, int32_t head,
                 int32_t q_begin, int32_t q_end, std::byte* scratch) {
  const TileScratch s = split_scratch(scratch, c.head_dim);
  const int32_t d = c.head_dim;
  const int rows = q_end - q_begin;
  const int32_t kv_head = head / c.group;
  for (int r = 0; r < rows; ++r) {
    std::memcpy(s.q + static_cast<size_t>(r) * d, c.query(seq.query_start + q_begin + r, head),
                sizeof(float) * static_cast<size_t>(d));
    s.max[r] = kMinusInf;
    s.sum[r] = 0.0f;
  }
  std::memset(s.acc, 0, sizeof(float) * static_cast<size_t>(rows) * d);
  const int64_t first_pos = query_position(seq, q_begin);
  const int64_t end_pos = query_position(seq, q_end - 1) + 1;  // positions any row sees

  for (int64_t first = 0; first < end_pos; first += kTile) {
    const int count = static_cast<int>(end_pos - first < kTile ? end_pos - first : kTile);
    load_kv_tile(c, seq, kv_head, first, count, s);
    std::memset(s.scores, 0, sizeof(float) * kTile * kTile);
    c.kernels->gemm(s.scores, s.q, s.kt, rows, d, kTile);
    for (int r = 0; r < rows; ++r) {
      float* row = s.scores + r * kTile;
      c.kernels->scale_f32(row, c.scale, kTile);
      // Positions past the tile's end or after this query's own position: -inf.
      const int64_t visible = first_pos + r + 1 - first;  // positions of this tile the row sees
      for (int t = 0; t < kTile; ++t) {
        if (t >= count || t >= visible) row[t] = kMinusInf;
      }
      float tile_max = kMinusInf;
      for (int t = 0; t < kTile; ++t) tile_max = std::fmax(tile_max, row[t]);
      if (tile_max == kMinusInf) {  // nothing visible: contributes nothing
        std::memset(row, 0, sizeof(float) * kTile);
        continue;
      }
      const float new_max = std::fmax(s.max[r], tile_max);
      if (new_max > s.max[r]) {
        const float old_scale = std::exp(s.max[r] - new_max);
        c.kernels->scale_f32(s.acc + static_cast<size_t>(r) * d, old_scale, d);
        s.sum[r] *= old_scale;
      }
      s.max[r] = new_max;
      s.sum[r] = static_cast<float>(static_cast<double>(s.sum[r]) + softmax_row(row, new_max));
    }
    c.kernels->gemm(s.acc, s.scores, s.v, rows, kTile, d);
  }
  for (int r = 0; r < rows; ++r) {
    float* acc = s.acc + static_cast<size_t>(r) * d;
    const float inverse = s.sum[r] == 0.0f ? 0.0f : 1.0f / s.sum[r];
    c.kernels->scale_f32(acc, inverse, d);
    std::memcpy(c.output(seq.query_start + q_begin + r, head), acc, sizeof(float) * static_cast<size_t>(d));
  }
}

}  // namespace pagoda::backend::cpu
