#pragma once
// Activations quantized to the CPU's Q8_K (quant/quantize_q8.cpp): per 256 values, the
// value of largest magnitude (the first, where several tie) maps to -127, scale
// iscale = -127 / max, q = round-half-even(iscale x) capped at 127, d = 1 / iscale. The
// k-quants' few-token kernel (matmul_vec_k8.cu) multiplies weights with them in
// integers, as the CPU's dot products do.

#include <cstdint>

#include "backend/cuda/context.h"
#include "backend/tensor.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

inline constexpr int64_t kQ8kValues = 256;  // values per scale
inline constexpr int64_t kQ8kSumValues = 32;  // values per sum

// Device arrays of n_tokens rows of n values (n a multiple of 256).
struct Q8kRows {
  int8_t* q = nullptr;       // [n_tokens][n]
  float* d = nullptr;        // [n_tokens][n / 256]
  int32_t* sums = nullptr;   // [n_tokens][n / 32]: the sum of each 32 quants
  int64_t n = 0;
  int64_t n_tokens = 0;
};

// Takes room for rows of x's shape from ctx.workspace (inside the caller's ScratchScope);
// false where the workspace is missing or full.
bool take_q8k_rows(const Context& ctx, int64_t n, int64_t n_tokens, Q8kRows* out);

// Quantizes x (f32 rows [n_tokens][n], rows x.nb[1] bytes apart) into `out`. The kernel
// lets the kernel after it start early (launch_order.cuh).
Status quantize_rows_q8k(const Context& ctx, const TensorView& x, const Q8kRows& out);

}  // namespace pagoda::backend::cuda
