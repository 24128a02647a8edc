#pragma once
// What the emulated tests of the few-token matmul kernels share (matmul_int8_emulated_test.cpp,
// matmul_vec_emulated_test.cpp): host weights as a launch's target, and the check
// of outputs against the dequantized rows in double within a share of each output's term
// scale S (sqrt of the sum of its terms' squares, which bounds any f32 summation of them).
// Include after simt_emulation.h and the kernel headers.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/matmul_vec_targets.cuh"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {

// w's rows as work items from first_item on, their outputs into y.
inline cuda::weights::VecTarget target_of(const HostWeights& w, float* y, int64_t first_item) {
  cuda::weights::VecTarget t;
  t.w = reinterpret_cast<const uint8_t*>(w.bytes.data());
  t.row_stride = static_cast<int64_t>(w.row_size());
  t.end = t.w + w.n_out * t.row_stride;
  t.y = y;
  t.first_item = first_item;
  return t;
}

// The first output (rows y_stride floats apart) farther than tolerance x S from w's
// dequantized rows times x's first n tokens in double ("" when none).
inline std::string first_outside(const std::vector<float>& y, int64_t y_stride,
                                 const HostWeights& w, const std::vector<float>& x, int64_t n,
                                 double tolerance) {
  for (int64_t j = 0; j < w.n_out; ++j) {
    const std::vector<float> row = w.dequantized_row(j);
    for (int64_t t = 0; t < n; ++t) {
      const ExactDot want = exact_dot(row, x.data() + t * w.n_in);
      const float got = y[static_cast<size_t>(t * y_stride + j)];
      if (!(std::abs(got - want.value) <= tolerance * want.scale)) {
        return "y[" + std::to_string(t) + "][" + std::to_string(j) + "] = " + std::to_string(got) +
               ", want " + std::to_string(want.value) + " (S " + std::to_string(want.scale) + ")";
      }
    }
  }
  return "";
}

}  // namespace pagoda::backend::cuda_testing
