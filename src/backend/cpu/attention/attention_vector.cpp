// The reference numerics mode's per-query schedule: one query at a time, online softmax
// over the positions in order, as the reference build's flash attention does for short
// batches.

#include <cmath>
#include <cstring>
#include <limits>

#include "backend/cpu/attention/attention_impl.h"
#include "quant/dequantize.h"

namespace pagoda::backend::cpu {
namespace {

// Scratch layout (bytes): q in the K dot format [4 * head_dim], the f16 accumulator
// [2 * head_dim], a dequantized V row [4 * head_dim], the f32 result [4 * head_dim].
struct VectorScratch {
  std::byte* q;
  uint16_t* vkq16;
  float* v32;
  float* vkq32;
};

VectorScratch split_scratch(std::byte* base, int32_t head_dim) {
  const size_t f = static_cast<size_t>(head_dim) * sizeof(float);
  return {base, reinterpret_cast<uint16_t*>(base + f), reinterpret_cast<float*>(base + 2 * f),
          reinterpret_cast<float*>(base + 3 * f)};
}

}  // namespace

size_t vector_scratch_bytes(int32_t head_dim) { return 4 * static_cast<size_t>(head_dim) * sizeof(float); }

SoftmaxState attend_positions(const AttentionContext& c, const SequenceAttention& seq, int64_t row,
                              int32_t head, int64_t begin, int64_t end, std::byte* scratch, float* vkq) {
  const VectorScratch s = split_scratch(scratch, c.head_dim);
  const int32_t kv_head = head / c.group;
  const int64_t n = c.head_dim;
  const bool f16_values = c.cache_type == DType::F16;
  c.k_dot->quantize(c.query(row, head), s.q, n);
  if (f16_values) {
    std::memset(s.vkq16, 0, static_cast<size_t>(n) * sizeof(uint16_t));
  } else {
    std::memset(vkq, 0, static_cast<size_t>(n) * sizeof(float));
  }
  float max = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  for (int64_t pos = begin; pos < end; ++pos) {
    const int64_t slot = c.slot(seq, pos);
    const std::byte* key = c.key(slot, kv_head);
    const float dot = f16_values ? c.kernels->dot_f16(reinterpret_cast<const uint16_t*>(key),
                                                      reinterpret_cast<const uint16_t*>(s.q), n)
                                 : c.k_dot->dot(n, key, s.q);
    const float score = dot * c.scale;
    float old_scale = 1.0f;  // applied to what was summed so far when the max rises
    float weight = 1.0f;     // exp(score - max)
    if (score > max) {
      old_scale = std::exp(max - score);
      max = score;
      if (f16_values) {
        c.kernels->scale_f16(s.vkq16, old_scale, n);
      } else {
        c.kernels->scale_f32(vkq, old_scale, n);
      }
    } else {
      weight = std::exp(score - max);
    }
    const std::byte* v = c.value(slot, kv_head);
    if (f16_values) {
      c.kernels->mad_f16(s.vkq16, reinterpret_cast<const uint16_t*>(v), weight, n);
    } else if (c.cache_type == DType::F32) {
      c.kernels->mad_f32(vkq, reinterpret_cast<const float*>(v), weight, n);
    } else {
      (void)quant::dequantize_row(c.cache_type, v, s.v32, n);  // q8_0: checked at allocation
      c.kernels->mad_f32(vkq, s.v32, weight, n);
    }
    sum = std::fma(sum, old_scale, weight);  // one rounding, as the reference's compiled S = S*ms + vs
  }
  if (f16_values) c.kernels->f16_to_f32(s.vkq16, vkq, n);
  return {max, sum};
}

void attend_query(const AttentionContext& c, const SequenceAttention& seq, int64_t row, int32_t head,
                  std::byte* scratch) {
  const VectorScratch s = split_scratch(scratch, c.head_dim);
  const int64_t pos = query_position(seq, row - seq.query_start);
  const SoftmaxState state = attend_positions(c, seq, row, head, 0, pos + 1, scratch, s.vkq32);
  const float inverse = state.sum == 0.0f ? 0.0f : 1.0f / state.sum;
  c.kernels->scale_f32(s.vkq32, inverse, c.head_dim);
  std::memcpy(c.output(row, head), s.vkq32, static_cast<size_t>(c.head_dim) * sizeof(float));
}

}  // namespace pagoda::backend::cpu
