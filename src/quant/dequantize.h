#pragma once
// Block formats to f32, bit-exact with the reference dequantization.

#include <cstdint>

#include "core/dtype.h"
#include "core/status.h"

namespace pagoda::quant {

// True for every type dequantize_row handles.
bool can_dequantize(DType type);

// Writes the n values of `src` (a row of `type`, n a multiple of its block size) to dst.
Status dequantize_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace pagoda::quant
