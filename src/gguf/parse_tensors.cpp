// Parser: the tensor infos, and where each tensor's data lies in the file.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gguf/parser.h"
#include "gguf/value.h"

namespace pagoda::gguf {
namespace {

// name length, n_dims, type, offset: the encoding of an unnamed, 0-dimensional tensor.
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

std::string tensor_label(std::string_view name) {
  return "tensor " + quoted(name);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

// "offset 4096" for an absolute file offset, or "offset 14176 + 18446744073709551615"
// when data_offset + offset does not fit in 64 bits.
std::string offset_string(uint64_t data_offset, uint64_t offset) {
  if (offset > std::numeric_limits<uint64_t>::max() - data_offset) {
    return "offset " + std::to_string(data_offset) + " + " + std::to_string(offset);
  }
  return "offset " + std::to_string(data_offset + offset);
}

std::string extent_string(uint64_t data_offset, const TensorInfo& tensor) {
  // Appended piece by piece: GCC 12 misreports "[" + std::string&& (-Wrestrict).
  std::string out = "[";
  out += offset_string(data_offset, tensor.offset);
  out += ", ";
  out += std::to_string(tensor.n_bytes);
  out += " bytes]";
  return out;
}

}  // namespace

Status Parser::parse_tensor_infos() {
  if (n_tensors_ > cursor_.remaining() / kMinTensorInfoBytes) {
    return error("header claims " + std::to_string(n_tensors_) + " tensors, more than the " +
                 std::to_string(cursor_.remaining()) + " remaining bytes can hold");
  }
  reader_.tensors_.reserve(n_tensors_);
  for (uint64_t i = 0; i < n_tensors_; ++i) PAGODA_TRY(parse_tensor_info(i));
  return Status::ok_status();
}

Status Parser::parse_tensor_info(uint64_t index) {
  std::string_view name;
  if (!cursor_.read_string(name)) return cut_short("the name of tensor #" + std::to_string(index));
  if (reader_.tensor_index_.contains(name)) return error("duplicate tensor name " + quoted(name));
  TensorInfo tensor;
  tensor.name = std::string(name);
  PAGODA_TRY(parse_shape(tensor));
  PAGODA_TRY(parse_type(tensor));
  if (!cursor_.read(tensor.offset)) {
    return cut_short("the data offset of " + tensor_label(tensor.name));
  }
  reader_.tensor_index_.emplace(tensor.name, reader_.tensors_.size());
  reader_.tensors_.push_back(std::move(tensor));
  return Status::ok_status();
}

Status Parser::parse_shape(TensorInfo& tensor) {
  uint32_t n_dims = 0;
  if (!cursor_.read(n_dims)) {
    return cut_short("the dimension count of " + tensor_label(tensor.name));
  }
  if (n_dims > kMaxDims) {
    return error(tensor_label(tensor.name) + " has " + std::to_string(n_dims) +
                 " dimensions, more than " + std::to_string(kMaxDims));
  }
  tensor.shape.resize(n_dims);
  for (uint32_t d = 0; d < n_dims; ++d) {
    if (!cursor_.read(tensor.shape[d])) {
      return cut_short("the shape of " + tensor_label(tensor.name));
    }
    // Zero is allowed (an empty tensor), as ggml allows it.
    if (tensor.shape[d] < 0) {
      return error(tensor_label(tensor.name) + " dimension " + std::to_string(d) +
                   " is negative (" + std::to_string(tensor.shape[d]) + ")");
    }
  }
  int64_t n_elements = 1;
  for (const int64_t ne : tensor.shape) {
    if (__builtin_mul_overflow(n_elements, ne, &n_elements)) {
      return error(tensor_label(tensor.name) + " shape " + shape_string(tensor.shape) +
                   " has more than 2^63 - 1 elements");
    }
  }
  return Status::ok_status();
}

// Reads the type and, from it and the (checked) shape, the size in bytes.
Status Parser::parse_type(TensorInfo& tensor) {
  uint32_t type_id = 0;
  if (!cursor_.read(type_id)) return cut_short("the type of " + tensor_label(tensor.name));
  const std::optional<DTypeTraits> traits = dtype_traits(type_id);
  if (!traits) {
    return error(tensor_label(tensor.name) + " has unknown type id " + std::to_string(type_id));
  }
  tensor.type = static_cast<DType>(type_id);
  const int64_t row_length = tensor.shape.empty() ? 1 : tensor.shape[0];
  if (row_length % traits->block_size != 0) {
    return error(tensor_label(tensor.name) + " of type " + std::string(traits->name) +
                 " has rows of " + std::to_string(row_length) +
                 " values, not a multiple of the block size " + std::to_string(traits->block_size));
  }
  // Every row is whole blocks, so the element count is too.
  const auto n_blocks = static_cast<uint64_t>(tensor.n_elements() / traits->block_size);
  if (__builtin_mul_overflow(n_blocks, static_cast<uint64_t>(traits->type_size), &tensor.n_bytes)) {
    return error(tensor_label(tensor.name) + " shape " + shape_string(tensor.shape) +
                 " takes more than 2^64 - 1 bytes");
  }
  return Status::ok_status();
}

Status Parser::place_tensor_data() {
  const uint64_t end_of_infos = cursor_.offset();
  if (reader_.tensors_.empty()) {
    // No data section; files without tensors (vocab-only GGUFs) end here, unpadded.
    reader_.data_offset_ = end_of_infos;
    return Status::ok_status();
  }
  const uint64_t alignment = reader_.alignment_;
  const uint64_t data_offset = (end_of_infos + alignment - 1) / alignment * alignment;
  const uint64_t file_size = cursor_.size();
  if (data_offset > file_size) {
    return error("cut short: the data section starts at offset " + std::to_string(data_offset) +
                 ", past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  reader_.data_offset_ = data_offset;
  const uint64_t data_size = file_size - data_offset;
  for (TensorInfo& tensor : reader_.tensors_) {
    if (tensor.offset % alignment != 0) {
      return error(tensor_label(tensor.name) + " offset " + std::to_string(tensor.offset) +
                   " is not a multiple of the alignment " + std::to_string(alignment));
    }
    if (tensor.offset > data_size || tensor.n_bytes > data_size - tensor.offset) {
      return error(tensor_label(tensor.name) + " data " + extent_string(data_offset, tensor) +
                   " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
    }
    tensor.data = reader_.bytes_.data() + data_offset + tensor.offset;
  }
  return check_no_overlap();
}

// Tensors may lie in any order, but no two may share a byte. Empty tensors occupy no
// bytes (ggml places them at the offset of the next tensor).
Status Parser::check_no_overlap() const {
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(reader_.tensors_.size());
  for (const TensorInfo& tensor : reader_.tensors_) {
    if (tensor.n_bytes > 0) by_offset.push_back(&tensor);
  }
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  // Sorted by start, any overlap shows between neighbours. Offsets are within the file.
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& before = *by_offset[i - 1];
    const TensorInfo& after = *by_offset[i];
    if (before.offset + before.n_bytes > after.offset) {
      const uint64_t data_offset = reader_.data_offset_;
      return error("tensors " + quoted(before.name) + " " + extent_string(data_offset, before) +
                   " and " + quoted(after.name) + " " + extent_string(data_offset, after) +
                   " overlap");
    }
  }
  return Status::ok_status();
}

}  // namespace pagoda::gguf
