// Scalar reference dot products of the k-quants and IQ4_XS with Q8_K activations. Each
// super-block of 256 values is unpacked to small integers, dotted with the activations
// group by group (exact integers), and scaled once: d_w * d_y * sum(scale * q * y)
// minus, for the formats with minimums, dmin_w * d_y * sum(min * group sum of y), the
// group sums coming precomputed in Q8_K's bsums.

#include <cstdint>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dot_kernels.h"
#include "quant/dot_scales.h"

namespace pagoda::quant::scalar {
namespace {

// sum_j q[j] * y[j] over `count` values.
int group_dot(const int8_t* q, const int8_t* y, int count) {
  int sum = 0;
  for (int j = 0; j < count; ++j) sum += q[j] * y[j];
  return sum;
}

// Q4_K and Q5_K share their scales, minimums and nibble layout; Q5_K adds a fifth bit.
// Value 64c + l (l < 32) is the low nibble of qs[32c + l], value 64c + 32 + l its high
// nibble; the fifth bits of those two are bits 2c and 2c + 1 of qh[l].
void unpack_q4_K_values(const uint8_t* qs, const uint8_t* qh, int8_t q[kQK_K]) {
  for (int c = 0; c < kQK_K / 64; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int high_low = qh ? ((qh[l] >> (2 * c)) & 1) << 4 : 0;
      const int high_high = qh ? ((qh[l] >> (2 * c + 1)) & 1) << 4 : 0;
      q[64 * c + l] = static_cast<int8_t>((qs[32 * c + l] & 0x0f) | high_low);
      q[64 * c + 32 + l] = static_cast<int8_t>((qs[32 * c + l] >> 4) | high_high);
    }
  }
}

float dot_q45_K_block(const uint8_t* packed_scales, half d, half dmin, const int8_t* q,
                      const BlockQ8_K& y) {
  uint32_t unpacked[4];
  dot_scales::unpack_q4_K(packed_scales, unpacked);
  const auto* scales = reinterpret_cast<const uint8_t*>(unpacked);  // [0..7] scales, [8..15] mins
  int sumi = 0;
  int summ = 0;
  for (int s = 0; s < kQK_K / 32; ++s) {
    sumi += scales[s] * group_dot(q + 32 * s, y.qs + 32 * s, 32);
    summ += scales[8 + s] * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
  }
  return fp16_to_f32(d) * y.d * static_cast<float>(sumi) -
         fp16_to_f32(dmin) * y.d * static_cast<float>(summ);
}

}  // namespace

float dot_q2_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // Value 128k + 32j + l is bits 2j..2j+1 of qs[32k + l]; group g = value / 16 has
    // scale scales[g] & 15 and minimum scales[g] >> 4.
    int8_t q[kQK_K];
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l)
          q[128 * k + 32 * j + l] = static_cast<int8_t>((x[b].qs[32 * k + l] >> (2 * j)) & 3);
    int sumi = 0;
    int summ = 0;
    for (int g = 0; g < kQK_K / 16; ++g) {
      sumi += (x[b].scales[g] & 0x0f) * group_dot(q + 16 * g, y[b].qs + 16 * g, 16);
      summ += (x[b].scales[g] >> 4) * y[b].bsums[g];
    }
    const float dall = y[b].d * fp16_to_f32(x[b].d);
    const float dmin = y[b].d * fp16_to_f32(x[b].dmin);
    sum += dall * static_cast<float>(sumi) - dmin * static_cast<float>(summ);
  }
  return sum;
}

float dot_q3_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // Value 128k + 32j + l: low bits 2j..2j+1 of qs[32k + l], minus 4 unless bit 4k + j
    // of hmask[l] is set; group g = value / 16 has scale scales6[g] - 32.
    int8_t q[kQK_K];
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) {
          const int low = (x[b].qs[32 * k + l] >> (2 * j)) & 3;
          const bool high = (x[b].hmask[l] >> (4 * k + j)) & 1;
          q[128 * k + 32 * j + l] = static_cast<int8_t>(high ? low : low - 4);
        }
    uint32_t unpacked[4];
    dot_scales::unpack_q3_K(x[b].scales, unpacked);
    const auto* scales = reinterpret_cast<const uint8_t*>(unpacked);
    int sumi = 0;
    for (int g = 0; g < kQK_K / 16; ++g)
      sumi += (scales[g] - 32) * group_dot(q + 16 * g, y[b].qs + 16 * g, 16);
    sum += fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

float dot_q4_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int8_t q[kQK_K];
    unpack_q4_K_values(x[b].qs, nullptr, q);
    sum += dot_q45_K_block(x[b].scales, x[b].d, x[b].dmin, q, y[b]);
  }
  return sum;
}

float dot_q5_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int8_t q[kQK_K];
    unpack_q4_K_values(x[b].qs, x[b].qh, q);
    sum += dot_q45_K_block(x[b].scales, x[b].d, x[b].dmin, q, y[b]);
  }
  return sum;
}

float dot_q6_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // In each half h of 128 values, value 128h + 32r + l takes its low 4 bits from
    // ql[64h + l + 32 * (r % 2)] (low nibble for r < 2, high for r >= 2) and its high 2
    // bits from bits 2r..2r+1 of qh[32h + l]; stored offset by 32.
    int8_t q[kQK_K];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 32; ++l) {
          const int low = (ql[l + 32 * (r % 2)] >> (4 * (r / 2))) & 0x0f;
          const int high = (qh[l] >> (2 * r)) & 3;
          q[128 * h + 32 * r + l] = static_cast<int8_t>((low | (high << 4)) - 32);
        }
    }
    int sumi = 0;
    for (int g = 0; g < kQK_K / 16; ++g)
      sumi += x[b].scales[g] * group_dot(q + 16 * g, y[b].qs + 16 * g, 16);
    sum += fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

float dot_iq4_xs(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    // Sub-block s (32 values) reads qs[16s .. 16s + 15]: low nibbles are its values
    // 0..15, high nibbles 16..31, each an index into the non-linear codebook.
    int sumi = 0;
    for (int s = 0; s < kQK_K / 32; ++s) {
      const uint8_t* qs = x[b].qs + 16 * s;
      const int8_t* q8 = y[b].qs + 32 * s;
      int sub = 0;
      for (int l = 0; l < 16; ++l)
        sub += kIQ4NLValues[qs[l] & 0x0f] * q8[l] + kIQ4NLValues[qs[l] >> 4] * q8[l + 16];
      sumi += (dot_scales::iq4_xs_scale(x[b].scales_l, x[b].scales_h, s) - 32) * sub;
    }
    sum += fp16_to_f32(x[b].d) * y[b].d * static_cast<float>(sumi);
  }
  return sum;
}

}  // namespace pagoda::quant::scalar
