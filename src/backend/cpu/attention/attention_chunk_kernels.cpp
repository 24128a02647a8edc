// Portable chunk kernels: the operations of attention_chunk_kernels.h written out lane by
// lane, so that they give the AVX2 kernels' bits on any CPU.

#include "backend/cpu/attention/attention_chunk_kernels.h"

#include <cstring>
#include <limits>

#include "core/fp16.h"
#include "quant/blocks.h"

// Each product and sum rounds on its own unless written as an FMA (the two kernel sets
// must round alike): no contraction.
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace pagoda::backend::cpu {
namespace {

constexpr int kLanes = 8;

float value_at(const void* row, DType type, int64_t i) {
  return type == DType::F16 ? fp16_to_f32(static_cast<const uint16_t*>(row)[i])
                            : static_cast<const float*>(row)[i];
}

// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
float sum_lanes(const float* l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// The vector max(a, b): a where a > b, else b (so b where either is NaN).
float max_op(float a, float b) {
  return a > b ? a : b;
}

float dot(const float* q, const void* key, DType type, int32_t head_dim) {
  float lanes[kLanes] = {};
  const int32_t full = head_dim / kLanes * kLanes;
  for (int32_t i = 0; i < full; i += kLanes) {
    for (int j = 0; j < kLanes; ++j)
      lanes[j] = std::fma(q[i + j], value_at(key, type, i + j), lanes[j]);
  }
  float sum = sum_lanes(lanes);
  for (int32_t i = full; i < head_dim; ++i) sum = std::fma(q[i], value_at(key, type, i), sum);
  return sum;
}

void scores(const float* q, int32_t n_rows, const void* const* keys, const void* const* /*values*/,
            DType type, int32_t n_pos, int32_t head_dim, float scale, float* out) {
  for (int32_t r = 0; r < n_rows; ++r) {
    const float* q_row = q + static_cast<int64_t>(r) * head_dim;
    float* out_row = out + static_cast<int64_t>(r) * kChunkPositions;
    for (int32_t p = 0; p < n_pos; ++p) out_row[p] = dot(q_row, keys[p], type, head_dim) * scale;
  }
}

ChunkSoftmax softmax(float* row, int32_t count) {
  float lanes[kLanes];
  for (float& l : lanes) l = -std::numeric_limits<float>::infinity();
  for (int32_t p = 0; p < count; ++p) lanes[p % kLanes] = max_op(row[p], lanes[p % kLanes]);
  // The vector reduction: halves, then pairs, then the last two.
  float half[4], quarter[2];
  for (int j = 0; j < 4; ++j) half[j] = max_op(lanes[j + 4], lanes[j]);
  for (int j = 0; j < 2; ++j) quarter[j] = max_op(half[j + 2], half[j]);
  const float max = max_op(quarter[1], quarter[0]);

  float sums[kLanes] = {};
  const int32_t padded = (count + kLanes - 1) / kLanes * kLanes;
  for (int32_t p = 0; p < padded; ++p) {
    row[p] = p < count ? softmax_exp(row[p] - max) : 0.0f;
    sums[p % kLanes] += row[p];
  }
  return {max, sum_lanes(sums)};
}

void accumulate_values(const float* w, int32_t n_rows, const void* const* values, DType type,
                       int32_t p_begin, int32_t p_end, int32_t head_dim, float* o) {
  for (int32_t r = 0; r < n_rows; ++r) {
    const float* w_row = w + static_cast<int64_t>(r) * kChunkPositions;
    float* o_row = o + static_cast<int64_t>(r) * head_dim;
    for (int32_t p = p_begin; p < p_end; ++p) {
      for (int32_t i = 0; i < head_dim; ++i)
        o_row[i] = std::fma(w_row[p], value_at(values[p], type, i), o_row[i]);
    }
  }
}

void merge(float* acc_o, ChunkSoftmax* acc, const float* part_o, ChunkSoftmax part,
           int32_t head_dim) {
  const float max = max_op(acc->max, part.max);
  const float a = softmax_exp(acc->max - max), b = softmax_exp(part.max - max);
  for (int32_t i = 0; i < head_dim; ++i) {
    const float kept = acc_o[i] * a;
    acc_o[i] = std::fma(part_o[i], b, kept);
  }
  const float kept_sum = acc->sum * a;
  acc->sum = std::fma(part.sum, b, kept_sum);
  acc->max = max;
}

void scale_into(const float* x, float v, float* y, int32_t n) {
  for (int32_t i = 0; i < n; ++i) y[i] = x[i] * v;
}

void dequantize_q8_0(const void* row, float* out, int32_t n) {
  for (int32_t b = 0; b < n / quant::kQK; ++b) {
    quant::BlockQ8_0 block;
    std::memcpy(&block, static_cast<const std::byte*>(row) + b * sizeof(block), sizeof(block));
    const float d = fp16_to_f32(block.d);
    for (int j = 0; j < quant::kQK; ++j)
      out[b * quant::kQK + j] = static_cast<float>(block.qs[j]) * d;
  }
}

constexpr ChunkKernels kScalarChunkKernels = {scores, softmax,    accumulate_values,
                                              merge,  scale_into, dequantize_q8_0};

}  // namespace

const ChunkKernels& chunk_kernels(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return kScalarChunkKernels;
    case Isa::kAvx2:
      return avx2::kChunkKernels;
    case Isa::kAvx512:
    case Isa::kAvx512Vnni:
    case Isa::kAmx:
      return avx512::kChunkKernels;
  }
  return kScalarChunkKernels;
}

}  // namespace pagoda::backend::cpu
