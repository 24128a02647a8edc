#pragma once
// Test rows for the dot-product kernels: random weight rows built byte by byte (so they
// do not depend on any quantizer), activations in each kernel's format, and an
// independent double-precision reference from dequantized values.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/dot.h"

namespace pagoda::quant::testing {

// Byte offsets, inside one block, of the fp16 scales and minimums of each format.
inline std::vector<size_t> half_field_offsets(DType type) {
  switch (type) {
    case DType::Q4_0: return {offsetof(BlockQ4_0, d)};
    case DType::Q4_1: return {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
    case DType::Q5_0: return {offsetof(BlockQ5_0, d)};
    case DType::Q5_1: return {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
    case DType::Q8_0: return {offsetof(BlockQ8_0, d)};
    case DType::IQ4_NL: return {offsetof(BlockIQ4_NL, d)};
    case DType::Q2_K: return {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)};
    case DType::Q3_K: return {offsetof(BlockQ3_K, d)};
    case DType::Q4_K: return {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)};
    case DType::Q5_K: return {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)};
    case DType::Q6_K: return {offsetof(BlockQ6_K, d)};
    case DType::IQ4_XS: return {offsetof(BlockIQ4_XS, d)};
    default: return {};
  }
}

inline bool is_float_type(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

// A row of n values of `type`: every quant, scale and bit field random; the fp16 block
// scales random too but kept in +-[2^-8, 2^-4] (random bits would give infinities and
// NaNs). Float types get values in [-1, 1].
inline std::vector<uint8_t> random_weight_row(DType type, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> row(static_cast<size_t>(row_bytes(type, n)));
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  if (is_float_type(type)) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = unit(rng);
      if (type == DType::F32) std::memcpy(row.data() + 4 * i, &v, 4);
      const uint16_t h = type == DType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
      if (type != DType::F32) std::memcpy(row.data() + 2 * i, &h, 2);
    }
    return row;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : row) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> exponent(-8.0f, -4.0f);
  const size_t block_bytes = static_cast<size_t>(traits(type).type_size);
  for (size_t block = 0; block < row.size(); block += block_bytes) {
    for (size_t offset : half_field_offsets(type)) {
      const float magnitude = std::exp2(exponent(rng));
      const uint16_t h = f32_to_fp16(byte(rng) % 2 ? magnitude : -magnitude);
      std::memcpy(row.data() + block + offset, &h, 2);
    }
  }
  return row;
}

// Activations as f32: normal values with a few outliers, as real hidden states have.
inline std::vector<float> random_activations(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  for (size_t i = 0; i < x.size(); i += 97) x[i] *= 8.0f;
  return x;
}

// The values an activation row stands for: d * q for the 8-bit formats.
inline std::vector<double> activation_values(DType format, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data();
    switch (format) {
      case DType::F32: { float f; std::memcpy(&f, p + 4 * i, 4); out[i] = f; break; }
      case DType::F16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); out[i] = fp16_to_f32(h); break; }
      case DType::BF16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); out[i] = bf16_to_f32(h); break; }
      case DType::Q8_0: {
        const auto& b = reinterpret_cast<const BlockQ8_0*>(p)[i / kQK];
        out[i] = static_cast<double>(fp16_to_f32(b.d)) * b.qs[i % kQK];
        break;
      }
      case DType::Q8_1: {
        const auto& b = reinterpret_cast<const BlockQ8_1*>(p)[i / kQK];
        out[i] = static_cast<double>(fp16_to_f32(b.d)) * b.qs[i % kQK];
        break;
      }
      case DType::Q8_K: {
        const auto& b = reinterpret_cast<const BlockQ8_K*>(p)[i / kQK_K];
        out[i] = static_cast<double>(b.d) * b.qs[i % kQK_K];
        break;
      }
      default: ADD_FAILURE() << "no activation format " << dtype_name(format); return out;
    }
  }
  return out;
}

struct Reference {
  double dot = 0.0;        // sum_i w[i] * a[i], in double
  double magnitude = 0.0;  // sum_i |w[i] * a[i]| (plus the minimum terms): the error scale
};

// The dot product from dequantized weights (dequantize_row) and activations, in double.
// Q4_1 / Q5_1 kernels use Q8_1's s = fp16(d * sum(q)) for the minimum's share, as the
// reference engine does; that rounding (up to 2^-11 relative) is part of the contract,
// so it is applied here too: + m * (s - d * sum(q)) per block.
inline Reference reference_dot(DType type, const void* w, const std::vector<uint8_t>& a, int64_t n) {
  const DotKernel* kernel = find_dot_kernel(type, Isa::kScalar);
  std::vector<float> weights(static_cast<size_t>(n));
  const Status s = dequantize_row(type, w, weights.data(), n);
  EXPECT_TRUE(s.ok()) << s.message();
  const std::vector<double> act = activation_values(kernel->activation, a, n);
  Reference r;
  for (int64_t i = 0; i < n; ++i) {
    r.dot += weights[i] * act[i];
    r.magnitude += std::fabs(weights[i] * act[i]);
  }
  if (type == DType::Q4_1 || type == DType::Q5_1) {
    const size_t weight_block = static_cast<size_t>(traits(type).type_size);
    for (int64_t b = 0; b < n / kQK; ++b) {
      uint16_t m_bits;
      std::memcpy(&m_bits, static_cast<const uint8_t*>(w) + b * weight_block + 2, 2);
      const auto& block = reinterpret_cast<const BlockQ8_1*>(a.data())[b];
      double sum_a = 0.0;
      for (int j = 0; j < kQK; ++j) sum_a += act[b * kQK + j];
      const double m = fp16_to_f32(m_bits);
      r.dot += m * (fp16_to_f32(block.s) - sum_a);
      r.magnitude += std::fabs(m * fp16_to_f32(block.s));
    }
  }
  return r;
}

}  // namespace pagoda::quant::testing
