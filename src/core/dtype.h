#pragma once
// Tensor element types, numbered as GGUF files number them (ggml_type). A block type
// stores `block_size` values in `type_size` bytes; plain types have block_size 1.

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct DTypeTraits {
  std::string_view name;  // as gguf-dump prints it: "f32", "q4_K", ...
  int64_t block_size;     // values per block
  int64_t type_size;      // bytes per block
};

// Traits of a type id read from a file; nullopt for ids no GGUF type has.
std::optional<DTypeTraits> dtype_traits(uint32_t id);
// Traits of a known type (never fails).
const DTypeTraits& traits(DType type);
std::string_view dtype_name(DType type);
// Parses a name such as "q4_K" or "Q4_K" (case-insensitive).
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes taken by a row of n values; n must be a multiple of the block size.
inline int64_t row_bytes(DType type, int64_t n) {
  const DTypeTraits& t = traits(type);
  return n / t.block_size * t.type_size;
}

}  // namespace pagoda
