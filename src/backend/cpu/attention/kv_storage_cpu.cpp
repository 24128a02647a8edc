#include "backend/cpu/attention/kv_storage_cpu.h"

#include <string>

namespace pagoda::backend::cpu {

Expected<std::unique_ptr<KvStorage>> CpuKvStorage::create(const KvCacheShape& shape) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0 ||
      shape.block_size <= 0 || shape.n_blocks <= 0) {
    return invalid_argument("kv cache: every size must be positive");
  }
  if (shape.type != DType::F16 && shape.type != DType::F32 && shape.type != DType::Q8_0) {
    return unsupported("kv cache: type " + std::string(dtype_name(shape.type)) +
                       " (use f16, f32 or q8_0)");
  }
  if (shape.type == DType::Q8_0 && shape.head_dim % 32 != 0) {
    return invalid_argument("kv cache: q8_0 needs a head dimension that is a multiple of 32, not " +
                            std::to_string(shape.head_dim));
  }
  const size_t token_bytes = shape.token_bytes();
  const size_t tokens = static_cast<size_t>(shape.n_blocks) * static_cast<size_t>(shape.block_size);
  if (tokens > SIZE_MAX / token_bytes) return invalid_argument("kv cache: size overflows");
  size_t array_bytes = tokens * token_bytes;
  array_bytes = (array_bytes + kAlignment - 1) / kAlignment * kAlignment;
  const size_t arrays = 2 * static_cast<size_t>(shape.n_layers);
  if (array_bytes > SIZE_MAX / arrays) return invalid_argument("kv cache: size overflows");
  AlignedPtr data = allocate_aligned(array_bytes * arrays);
  if (!data) {
    return resource_exhausted("kv cache: cannot allocate " + std::to_string(array_bytes * arrays) +
                              " bytes");
  }
  return std::unique_ptr<KvStorage>(new CpuKvStorage(shape, std::move(data), array_bytes));
}

TensorView CpuKvStorage::view(size_t array_index) const {
  const int64_t row = static_cast<int64_t>(shape_.n_kv_heads) * shape_.head_dim;
  const int64_t tokens = static_cast<int64_t>(shape_.n_blocks) * shape_.block_size;
  return make_view(data_.get() + array_index * array_bytes_, shape_.type, row, tokens);
}

}  // namespace pagoda::backend::cpu
