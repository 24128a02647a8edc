#include "model/weight_loader.h"

#include <algorithm>
#include <span>
#include <vector>

#include "quant/dequantize.h"
#include "quant/dot.h"

namespace pagoda::model {
namespace {

// "[576, 1536]"
std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Equal as GGUF shapes: missing trailing dimensions count as 1.
bool same_shape(std::span<const int64_t> actual, std::span<const int64_t> expected) {
  const size_t n = std::max(actual.size(), expected.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = i < actual.size() ? actual[i] : 1;
    const int64_t e = i < expected.size() ? expected[i] : 1;
    if (a != e) return false;
  }
  return true;
}

// A view of the tensor where it lies in the mapping. Ops never write weights, and the
// mapping is read-only, so the const_cast only satisfies the view's type.
backend::TensorView host_view(const gguf::TensorInfo& tensor) {
  int64_t ne[4] = {1, 1, 1, 1};
  for (size_t i = 0; i < tensor.shape.size() && i < 4; ++i) ne[i] = tensor.shape[i];
  return backend::make_view(const_cast<uint8_t*>(tensor.data), tensor.type, ne[0], ne[1], ne[2],
                            ne[3]);
}

}  // namespace

std::string layer_tensor(int32_t layer, std::string_view suffix) {
  return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

Expected<backend::TensorView> WeightLoader::matrix(std::string_view name, int64_t n_in,
                                                   int64_t n_out) {
  return load(name, Use::kMatmul, {n_in, n_out});
}

Expected<backend::TensorView> WeightLoader::table(std::string_view name, int64_t dim,
                                                  int64_t n_rows) {
  return load(name, Use::kTable, {dim, n_rows});
}

Expected<backend::TensorView> WeightLoader::vector(std::string_view name, int64_t n) {
  return load(name, Use::kVector, {n});
}

Expected<backend::TensorView> WeightLoader::load(std::string_view name, Use use,
                                                 std::initializer_list<int64_t> shape) {
  const gguf::TensorInfo* tensor = file_.find_tensor(name);
  if (tensor == nullptr) {
    return error(ErrorCode::kNotFound, "missing tensor " + gguf::quoted(name));
  }
  const std::vector<int64_t> expected(shape);
  if (!same_shape(tensor->shape, expected)) {
    return error(ErrorCode::kInvalidArgument, "tensor " + gguf::quoted(name) + " has shape " +
                                                  shape_string(tensor->shape) + ", expected " +
                                                  shape_string(expected));
  }
  PAGODA_TRY(check_type(*tensor, use));
  if (const auto it = uploaded_.find(name); it != uploaded_.end()) return it->second;
  PAGODA_ASSIGN_OR_RETURN(const backend::TensorView view, backend_.upload_weight(host_view(*tensor)));
  uploaded_.emplace(std::string(name), view);
  return view;
}

Status WeightLoader::check_type(const gguf::TensorInfo& tensor, Use use) const {
  const std::string type(dtype_name(tensor.type));
  switch (use) {
    case Use::kMatmul:
      if (quant::dot_kernel(tensor.type) != nullptr) return {};
      return error(ErrorCode::kUnsupported, "tensor " + gguf::quoted(tensor.name) +
                                                " has type " + type +
                                                ", which has no matrix multiplication");
    case Use::kTable:
      if (quant::can_dequantize(tensor.type)) return {};
      return error(ErrorCode::kUnsupported, "tensor " + gguf::quoted(tensor.name) +
                                                " has type " + type + ", which cannot be dequantized");
    case Use::kVector:
      if (tensor.type == DType::F32) return {};
      return error(ErrorCode::kUnsupported, "tensor " + gguf::quoted(tensor.name) +
                                                " has type " + type + ", expected f32");
  }
  return internal_error("unknown weight use");
}

Status WeightLoader::check_all_used(std::string_view architecture) const {
  for (const gguf::TensorInfo& tensor : file_.tensors()) {
    if (!uploaded_.contains(tensor.name)) {
      return error(ErrorCode::kInvalidArgument,
                   "tensor " + gguf::quoted(tensor.name) + " is not used by architecture " +
                       gguf::quoted(architecture));
    }
  }
  return {};
}

Status WeightLoader::error(ErrorCode code, const std::string& problem) const {
  return {code, file_.name() + ": " + problem};
}

}  // namespace pagoda::model
