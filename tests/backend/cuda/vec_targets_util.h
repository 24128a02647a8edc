#pragma once
// What the emulated tests of the few-token matmul kernels share (matmul_int8_emulated_test.cpp,
// matmul_vec_emulated_test.cpp): host weights as a launch's targets, the kernel
// instantiation the launchers take, and the check
// of outputs against the dequantized rows in double within a share of each output's term
// scale S (sqrt of the sum of its terms' squares, which bounds any f32 summation of them).
// Include after simt_emulation.h and the kernel headers.

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cuda/matmul_vec_targets.cuh"
#include "weight_test_util.h"

namespace pagoda::backend::cuda_testing {

// The launch's targets of host weights, each with its outputs at its pointer, as
// matmul_vec gathers them from views (vec_targets: the weights' rows numbered one after
// another, in the order given).
inline cuda::weights::VecTargets targets_of(
    std::initializer_list<std::pair<const HostWeights*, float*>> weights) {
  std::vector<MatmulTarget> views;
  for (const auto& [w, y] : weights)
    views.push_back({w->view(), make_view(y, DType::F32, w->n_out)});
  return cuda::weights::vec_targets(views);
}

// The fused SwiGLU's gate and up, both writing `out`, as matmul_vec_swiglu gathers them.
inline cuda::weights::VecTargets swiglu_targets_of(const HostWeights& gate, const HostWeights& up,
                                                   float* out) {
  return cuda::weights::swiglu_targets(gate.view(), up.view(),
                                       make_view(out, DType::F32, gate.n_out));
}

// Calls kernel(swiglu, max_tokens), both std::integral_constant, with the instantiation
// the vector launchers (matmul_vec.cu, matmul_vec_int8.cu, matmul_vec_staged.cu) take for
// n tokens: the fused SwiGLU for one token, else one token, else up to kVecMaxTokens.
template <class Kernel>
void with_launched_instantiation(bool swiglu, int64_t n, Kernel&& kernel) {
  using One = std::integral_constant<int, 1>;
  if (swiglu) {
    kernel(std::true_type{}, One{});
  } else if (n == 1) {
    kernel(std::false_type{}, One{});
  } else {
    kernel(std::false_type{}, std::integral_constant<int, cuda::weights::kVecMaxTokens>{});
  }
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
