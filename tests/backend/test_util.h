#pragma once
// Helpers of the backend tests: random data, owned f32 matrices and views into them.

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

}  // namespace pagoda::backend::testing
