#pragma once
// Which type each tensor of a model is stored in (a random model from mkmodel, or a model
// converted by quantize): one type for every matrix, or one of llama-quantize's K-quant
// mixes, with its fallbacks for rows that do not fill whole blocks. Norms and biases are
// always f32.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/dtype.h"
#include "core/status.h"
#include "tools/random_model_layout.h"

namespace pagoda::tools {

struct WeightScheme {
  DType base = DType::F16;
  bool mix = false;        // q4_K_M / q5_K_M: more bits where llama-quantize puts them
  uint32_t file_type = 1;  // general.file_type (llama_ftype numbering)
};

// "f16", "q8_0", "q4_K", ... (any type with a quantizer), or "q4_K_M" / "q5_K_M". An
// unknown name's error lists the valid ones.
Expected<WeightScheme> parse_weight_scheme(std::string_view name);

// Every name parse_weight_scheme accepts, comma-separated: "f32, f16, ..., q4_K_M, q5_K_M".
std::string weight_scheme_names();

// The type `tensor` is written in, for a model of n_layer blocks; `tied_output`: the
// token embedding doubles as the output projection.
DType tensor_type(const WeightScheme& scheme, const TensorPlan& tensor, int32_t n_layer,
                  bool tied_output);

}  // namespace pagoda::tools
