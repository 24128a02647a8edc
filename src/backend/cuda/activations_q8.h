#pragma once
// Activations quantized to the CPU's 8-bit formats (quant/quantize_q8.cpp), operation for
// operation, for the few-token kernel that multiplies quantized weights in integers
// (matmul_vec_int8.cu) as the CPU's dot products do:
// - Q8_K (the k-quants'): per 256 values, the first value of largest magnitude maps to
//   -127: iscale = -127 / max, q = round-half-even(iscale x) capped at 127, d = 1 / iscale.
// - Q8_0 and Q8_1 (the 32-value formats'), as the CPU rounds activations: per 32 values
//   d = amax / 127 (kept as f16), q = round-half-even(x * (127 / amax)); Q8_1 adds
//   s = f16(sum(q) * d).

#include <cstdint>

#include "backend/cuda/context.h"
#include "backend/tensor.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

enum class ActivationFormat { kQ8_0, kQ8_1, kQ8_K };

// Values per scale d: 256 for Q8_K, 32 for the others.
inline constexpr int64_t scale_values(ActivationFormat f) { return f == ActivationFormat::kQ8_K ? 256 : 32; }

// Values per sum of quants: 16 for Q8_K (its bsums), 32 for the others.
inline constexpr int64_t sum_values(ActivationFormat f) { return f == ActivationFormat::kQ8_K ? 16 : 32; }

// Device arrays of n_tokens rows of n values (n a multiple of scale_values).
struct QuantizedRows {
  int8_t* q = nullptr;      // [n_tokens][n]
  float* d = nullptr;       // [n_tokens][n / scale_values]: each scale (Q8_0, Q8_1: its f16 value)
  float* s = nullptr;       // [n_tokens][n / 32]: Q8_1's s (its f16 value); null for the others
  int32_t* sums = nullptr;  // [n_tokens][n / sum_values]: the sum of each 16 or 32 quants
  int64_t n = 0;
  int64_t n_tokens = 0;
};

// Takes room for rows of this shape from ctx.workspace (inside the caller's
// ScratchScope); false where the workspace is missing or full.
bool take_quantized_rows(const Context& ctx, ActivationFormat format, int64_t n, int64_t n_tokens,
                         QuantizedRows* out);

// Quantizes x (f32 rows [n_tokens][n], rows x.nb[1] bytes apart) into `out`. The kernel
// lets the kernel after it start early (launch_order.cuh).
Status quantize_rows(const Context& ctx, ActivationFormat format, const TensorView& x, const QuantizedRows& out);

}  // namespace pagoda::backend::cuda
