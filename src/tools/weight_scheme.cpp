#include "tools/weight_scheme.h"

#include <cctype>
#include <optional>
#include <string>

#include "quant/quantize.h"

namespace pagoda::tools {
namespace {

// general.file_type of a model whose matrices are mostly `type`; the K-quants count as
// their "small" mix (the closest llama_ftype to "everything in this type").
std::optional<uint32_t> file_type_of(DType type) {
  switch (type) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::Q4_0:
      return 2;
    case DType::Q4_1:
      return 3;
    case DType::Q8_0:
      return 7;
    case DType::Q5_0:
      return 8;
    case DType::Q5_1:
      return 9;
    case DType::Q2_K:
      return 10;
    case DType::Q3_K:
      return 11;
    case DType::Q4_K:
      return 14;
    case DType::Q5_K:
      return 16;
    case DType::Q6_K:
      return 18;
    case DType::IQ4_NL:
      return 25;
    case DType::IQ4_XS:
      return 30;
    case DType::BF16:
      return 32;
    default:
      return std::nullopt;
  }
}

// llama-quantize's choice of layers that get more bits in the _M mixes: the first and
// last eighth, and every third layer in between.
bool use_more_bits(int32_t layer, int32_t n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

DType mixed_type(const WeightScheme& scheme, const TensorPlan& tensor, int32_t n_layer,
                 bool tied_output) {
  const bool q4 = scheme.base == DType::Q4_K;
  switch (tensor.role) {
    case TensorRole::kOutput:
      return DType::Q6_K;
    case TensorRole::kTokenEmbedding:
      return tied_output ? DType::Q6_K : scheme.base;
    case TensorRole::kAttnQkv:
      return q4 ? DType::Q5_K : DType::Q6_K;
    case TensorRole::kAttnV:
    case TensorRole::kFfnDown:
      return use_more_bits(tensor.layer, n_layer) ? DType::Q6_K : scheme.base;
    default:
      return scheme.base;
  }
}

// A type whose blocks fit rows of `row` values, as llama-quantize picks one.
DType fitting_type(DType type, int64_t row) {
  if (row % traits(type).block_size == 0) return type;
  DType fallback = DType::F16;
  switch (type) {
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::IQ4_XS:
      fallback = DType::IQ4_NL;
      break;
    case DType::Q4_K:
      fallback = DType::Q5_0;
      break;
    case DType::Q5_K:
      fallback = DType::Q5_1;
      break;
    case DType::Q6_K:
      fallback = DType::Q8_0;
      break;
    default:
      break;
  }
  if (row % traits(fallback).block_size != 0 || !quant::can_quantize(fallback)) return DType::F16;
  return fallback;
}

}  // namespace

Expected<WeightScheme> parse_weight_scheme(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "q4_k_m") return WeightScheme{DType::Q4_K, true, 15};
  if (lower == "q5_k_m") return WeightScheme{DType::Q5_K, true, 17};
  const std::optional<DType> type = dtype_from_name(name);
  const std::optional<uint32_t> file_type = type ? file_type_of(*type) : std::nullopt;
  if (!type || !file_type || !quant::can_quantize(*type)) {
    return invalid_argument("unknown or unsupported weight type '" + std::string(name) +
                            "' (valid: " + weight_scheme_names() + ")");
  }
  return WeightScheme{*type, false, *file_type};
}

std::string weight_scheme_names() {
  // Every type in its id order, then the mixes.
  std::string names;
  for (uint32_t id = 0; id <= static_cast<uint32_t>(DType::MXFP4); ++id) {
    const std::optional<DTypeTraits> known = dtype_traits(id);
    const DType type = static_cast<DType>(id);
    if (!known || !file_type_of(type) || !quant::can_quantize(type)) continue;
    names += std::string(known->name) + ", ";
  }
  return names + "q4_K_M, q5_K_M";
}

DType tensor_type(const WeightScheme& scheme, const TensorPlan& tensor, int32_t n_layer,
                  bool tied_output) {
  switch (tensor.role) {
    case TensorRole::kNorm:
    case TensorRole::kBias:
    case TensorRole::kPositionEmbedding:
      return DType::F32;  // llama-quantize leaves these alone
    default:
      break;
  }
  const DType type = scheme.mix ? mixed_type(scheme, tensor, n_layer, tied_output) : scheme.base;
  return fitting_type(type, tensor.shape[0]);
}

}  // namespace pagoda::tools
