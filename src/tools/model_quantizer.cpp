#include "tools/model_quantizer.h"

#include <algorithm>

#include "core/thread_pool.h"
#include "gguf/writer.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "tools/quantize_rows.h"
#include "tools/tensor_role.h"

namespace pagoda::tools {
namespace {


bool is_float(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

// Only weights of two or more dimensions change type, as llama-quantize does: norms,
// biases and other vectors keep theirs.
bool is_convertible_matrix(const TensorPlan& plan) {
  if (plan.shape.size() < 2 || !plan.name.ends_with(".weight")) return false;
  return plan.role != TensorRole::kNorm && plan.role != TensorRole::kBias &&
         plan.role != TensorRole::kPositionEmbedding;
}

// The tensor's rows dequantized to f32 and quantized to `target`, in parallel.
Expected<std::vector<uint8_t>> convert_tensor(const gguf::TensorInfo& tensor, DType target,
                                              ThreadPool& pool) {
  const int64_t row = tensor.shape.empty() ? 1 : tensor.shape[0];
  const int64_t n_rows = row == 0 ? 0 : tensor.n_elements() / row;
  const size_t source_row_bytes = static_cast<size_t>(row_bytes(tensor.type, row));
  return quantize_rows(
      target, row, n_rows, pool,
      [&](int64_t r, std::span<float> values) {
        return quant::dequantize_row(tensor.type, tensor.data + source_row_bytes * static_cast<size_t>(r),
                                     values.data(), row);
      },
      tensor.name);
}

}  // namespace

uint64_t QuantizationPlan::source_bytes() const {
  uint64_t total = 0;
  for (const TensorConversion& tensor : tensors) total += tensor.source_bytes;
  return total;
}

uint64_t QuantizationPlan::target_bytes() const {
  uint64_t total = 0;
  for (const TensorConversion& tensor : tensors) total += tensor.target_bytes;
  return total;
}

Expected<QuantizationPlan> plan_quantization(const gguf::Reader& source, std::string_view type) {
  QuantizationPlan plan;
  PAGODA_ASSIGN_OR_RETURN(plan.scheme, parse_weight_scheme(type));
  std::vector<TensorPlan> roles;
  roles.reserve(source.tensors().size());
  for (const gguf::TensorInfo& tensor : source.tensors()) {
    roles.push_back(tensor_plan_of(tensor.name, tensor.shape));
  }
  const int32_t n_layer = layer_count(roles);
  const bool tied_output = source.find_tensor("output.weight") == nullptr;
  for (size_t i = 0; i < roles.size(); ++i) {
    const gguf::TensorInfo& tensor = source.tensors()[i];
    TensorConversion conversion{tensor.name, tensor.shape, tensor.type, tensor.type,
                                tensor.n_bytes, tensor.n_bytes};
    if (is_convertible_matrix(roles[i])) {
      conversion.target = tensor_type(plan.scheme, roles[i], n_layer, tied_output);
    }
    if (conversion.converted()) {
      if (!quant::can_dequantize(tensor.type)) {
        return unsupported(source.name() + ": tensor '" + tensor.name + "' has type " +
                           std::string(dtype_name(tensor.type)) +
                           ", which cannot be converted (no dequantizer for it)");
      }
      conversion.target_bytes = static_cast<uint64_t>(
          row_bytes(conversion.target, tensor.shape[0]) * tensor.rows());
      if (!is_float(tensor.type) && !is_float(conversion.target)) plan.requantizes = true;
    }
    plan.tensors.push_back(std::move(conversion));
  }
  return plan;
}

Status write_quantized_model(const gguf::Reader& source, const QuantizationPlan& plan,
                             const std::string& path, int n_threads) {
  if (plan.tensors.size() != source.tensors().size()) {
    return invalid_argument("quantize: the plan was not made for " + source.name());
  }
  gguf::Writer writer;
  writer.set_version(source.version());
  for (const auto& [key, value] : source.metadata()) PAGODA_TRY(writer.set(key, value));
  PAGODA_TRY(writer.set_u32("general.quantization_version", kQuantizationVersion));
  PAGODA_TRY(writer.set_u32("general.file_type", plan.scheme.file_type));

  ThreadPool pool(n_threads > 0 ? n_threads : physical_core_count());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const gguf::TensorInfo& tensor = source.tensors()[i];
    const TensorConversion& conversion = plan.tensors[i];
    if (!conversion.converted()) {
      PAGODA_TRY(writer.add_tensor(tensor.name, tensor.type, tensor.shape, tensor.bytes()));
      continue;
    }
    PAGODA_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes,
                            convert_tensor(tensor, conversion.target, pool));
    PAGODA_TRY(writer.add_tensor(tensor.name, conversion.target, tensor.shape, bytes));
  }
  return writer.write_file(path);
}

}  // namespace pagoda::tools
