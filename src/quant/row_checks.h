#pragma once
// Argument checks shared by quantize_row and dequantize_row: a row is n values of a type,
// n a whole number of blocks, with both buffers present when there is anything to do.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"

namespace pagoda::quant {

// "q4_K", or "type id 99" for a value no GGUF type has (never trust an id read from a file).
inline std::string describe_type(DType type) {
  const auto t = dtype_traits(static_cast<uint32_t>(type));
  return t ? std::string(t->name) : "type id " + std::to_string(static_cast<uint32_t>(type));
}

// `op` names the operation in messages ("quantize", "dequantize"); `type` must be valid.
inline Status check_row_args(std::string_view op, DType type, const void* src, const void* dst,
                             int64_t n) {
  const int64_t block = traits(type).block_size;
  if (n < 0 || n % block != 0) {
    return invalid_argument(std::string(op) + ": " + std::to_string(n) + " values of " +
                            describe_type(type) + " is not a whole number of " +
                            std::to_string(block) + "-value blocks");
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return invalid_argument(std::string(op) + ": null buffer for " + std::to_string(n) + " values");
  }
  return Status::ok_status();
}

}  // namespace pagoda::quant
