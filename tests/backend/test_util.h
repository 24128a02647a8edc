#pragma once
// Helpers of the backend tests: random data, owned f32 matrices and views into them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backend/tensor.h"

namespace pagoda::backend::testing {

inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// An f32 matrix [rows][stride] whose view shows the first `cols` columns of each row, so
// tests also run on strided rows.
struct Matrix {
  int64_t rows, cols, stride;
  std::vector<float> data;
  Matrix(int64_t r, int64_t c, int64_t pad = 0, uint32_t seed = 0, float scale = 1.0f)
      : rows(r), cols(c), stride(c + pad), data(seed ? random_values(static_cast<size_t>(r * (c + pad)), seed, scale)
                                                      : std::vector<float>(static_cast<size_t>(r * (c + pad)))) {}
  float& at(int64_t r, int64_t c) { return data[static_cast<size_t>(r * stride + c)]; }
  float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * stride + c)]; }
  TensorView view() {
    TensorView v = make_view(data.data(), DType::F32, cols, rows);
    v.nb[1] = static_cast<size_t>(stride) * sizeof(float);
    v.nb[2] = v.nb[3] = v.nb[1] * static_cast<size_t>(rows);
    return v;
  }
};

// |a - b| <= atol + rtol * |b|.
inline bool close(double a, double b, double atol, double rtol) { return std::fabs(a - b) <= atol + rtol * std::fabs(b); }

// softmax(q k^T * scale) v in double over the first n_positions rows of keys and values
// ([n][q.size()] f32, as a cache holds them): the normalized output, and the largest |v|
// it read (the scale of its rounding).
struct ExactAttention {
  std::vector<double> out;
  double max_v = 0.0;
};

inline ExactAttention exact_attention(const std::vector<double>& q, const float* keys, const float* values,
                                      int64_t n_positions, double scale) {
  const auto d = static_cast<int64_t>(q.size());
  std::vector<double> scores(static_cast<size_t>(n_positions));
  double max_score = -INFINITY;
  for (int64_t p = 0; p < n_positions; ++p) {
    double dot = 0.0;
    for (int64_t j = 0; j < d; ++j) dot += q[static_cast<size_t>(j)] * keys[p * d + j];
    scores[static_cast<size_t>(p)] = dot * scale;
    max_score = std::max(max_score, scores[static_cast<size_t>(p)]);
  }
  ExactAttention a;
  a.out.assign(static_cast<size_t>(d), 0.0);
  double sum = 0.0;
  for (int64_t p = 0; p < n_positions; ++p) {
    const double w = std::exp(scores[static_cast<size_t>(p)] - max_score);
    sum += w;
    for (int64_t j = 0; j < d; ++j) {
      a.out[static_cast<size_t>(j)] += w * values[p * d + j];
      a.max_v = std::max(a.max_v, std::fabs(double(values[p * d + j])));
    }
  }
  for (double& x : a.out) x /= sum;
  return a;
}

}  // namespace pagoda::backend::testing
