// Scalar reference dot products of the 32-value block formats with Q8_0 / Q8_1
// activations: an exact integer dot per block, then one float multiply by the block's
// scales, in the same order of operations as ggml's ggml_vec_dot_*_q8_* so the sums
// agree with it to the last bits. Every SIMD kernel is tested against these.
//
// Layout reminder (quant/blocks.h): byte j of qs holds value j in its low nibble and
// value j + 16 in its high nibble; bit j of qh is the fifth bit of value j.

#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot_kernels.h"

namespace pagoda::quant::scalar {
namespace {

uint32_t load_qh(const uint8_t qh[4]) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  return bits;
}

// sum_j q[j] * y[j] for the 32 nibbles of qs (as unsigned 0..15).
int nibble_dot(const uint8_t* qs, const int8_t* y) {
  int sum = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    sum += (qs[j] & 0x0f) * y[j];
    sum += (qs[j] >> 4) * y[j + kQK / 2];
  }
  return sum;
}

// sum_j q[j] * y[j] for the 5-bit values (0..31) of a Q5 block.
int five_bit_dot(const uint8_t* qs, uint32_t qh, const int8_t* y) {
  int sum = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const int low = (qs[j] & 0x0f) | (((qh >> j) & 1) << 4);
    const int high = (qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
    sum += low * y[j] + high * y[j + kQK / 2];
  }
  return sum;
}

int sum_of(const int8_t* y) {
  int sum = 0;
  for (int j = 0; j < kQK; ++j) sum += y[j];
  return sum;
}

}  // namespace

float dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    // Values are q - 8: subtract 8 * sum(y) once instead of 8 from every value.
    const int sumi = nibble_dot(x[b].qs, y[b].qs) - 8 * sum_of(y[b].qs);
    sum += static_cast<float>(sumi) * fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d);
  }
  return sum;
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    // Values are d * q + m; y.s = d_y * sum(y) carries the minimum's share.
    const int sumi = nibble_dot(x[b].qs, y[b].qs);
    sum += (fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d)) * static_cast<float>(sumi) +
           fp16_to_f32(x[b].m) * fp16_to_f32(y[b].s);
  }
  return sum;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const int sumi = five_bit_dot(x[b].qs, load_qh(x[b].qh), y[b].qs) - 16 * sum_of(y[b].qs);
    sum += (fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d)) * static_cast<float>(sumi);
  }
  return sum;
}

float dot_q5_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    const int sumi = five_bit_dot(x[b].qs, load_qh(x[b].qh), y[b].qs);
    sum += (fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d)) * static_cast<float>(sumi) +
           fp16_to_f32(x[b].m) * fp16_to_f32(y[b].s);
  }
  return sum;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ8_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += x[b].qs[j] * y[b].qs[j];
    sum += static_cast<float>(sumi) * (fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d));
  }
  return sum;
}

float dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_NL*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      sumi += kIQ4NLValues[x[b].qs[j] & 0x0f] * y[b].qs[j];
      sumi += kIQ4NLValues[x[b].qs[j] >> 4] * y[b].qs[j + kQK / 2];
    }
    sum += (fp16_to_f32(y[b].d) * fp16_to_f32(x[b].d)) * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace pagoda::quant::scalar
