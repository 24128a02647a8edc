#pragma once
// Converts a GGUF model's weights to another type (pagoda quantize): every metadata key
// is copied (general.file_type set to the new type's), every matrix is stored in the type
// the weight scheme picks for its role (weight_scheme.h, so mixes such as q4_K_M and the
// fallbacks for rows that fill no whole block apply as for mkmodel), and everything else
// (norms, biases, tensors of one dimension) is copied as it is.
//
// A matrix changes type through f32: its rows are dequantized, then quantized to the
// target, in parallel over rows; a row's bytes depend only on the row, so the file is the
// same whatever the thread count. A matrix already in its target type is copied byte for
// byte. Converting a matrix that is already quantized (not f32, f16 or bf16) to another
// quantized type is allowed: the plan says so, since the rounding errors of both
// quantizations add up (back to a float type, nothing more is lost).
//
//   PAGODA_ASSIGN_OR_RETURN(const gguf::Reader source, gguf::Reader::open("in.gguf"));
//   PAGODA_ASSIGN_OR_RETURN(const QuantizationPlan plan, plan_quantization(source, "q4_K_M"));
//   PAGODA_TRY(write_quantized_model(source, plan, "out.gguf", /*n_threads=*/0));
//
// Memory: the output is built in memory before it is written (gguf::Writer holds every
// tensor, then serializes them into one buffer), so the peak is about twice the output
// file's size on top of the source's mapping (which the page cache may drop).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "gguf/reader.h"
#include "tools/weight_scheme.h"

namespace pagoda::tools {

// GGML's quantization format version, which llama-quantize writes as
// general.quantization_version.
constexpr uint32_t kQuantizationVersion = 2;

// One tensor of the output, in the source's order.
struct TensorConversion {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] first
  DType source = DType::F32;
  DType target = DType::F32;
  uint64_t source_bytes = 0;
  uint64_t target_bytes = 0;

  bool converted() const { return source != target; }
};

struct QuantizationPlan {
  WeightScheme scheme;
  std::vector<TensorConversion> tensors;
  // Some matrix goes from a quantized type to another quantized type: quality is lost
  // twice.
  bool requantizes = false;

  uint64_t source_bytes() const;
  uint64_t target_bytes() const;
};

// What each of `source`'s tensors becomes under the weight scheme `type` ("q8_0",
// "q4_K_M", ...). Fails on an unknown type (the error lists the valid ones) and on a
// matrix that must change type but whose type cannot be dequantized.
Expected<QuantizationPlan> plan_quantization(const gguf::Reader& source, std::string_view type);

// Writes `source` converted as `plan` says to `path` (through a temporary renamed into
// place). n_threads: 0 for one per physical core.
Status write_quantized_model(const gguf::Reader& source, const QuantizationPlan& plan,
                             const std::string& path, int n_threads);

}  // namespace pagoda::tools
