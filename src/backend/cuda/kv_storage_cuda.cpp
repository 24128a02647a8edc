#include "backend/cuda/kv_storage_cuda.h"

#include <cstdint>
#include <string>

#include "backend/cuda/cuda_status.h"

namespace pagoda::backend::cuda {
namespace {

constexpr size_t kArrayAlignment = 256;  // each array starts where cudaMalloc would align it

Status check_shape(const KvCacheShape& shape) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0 || shape.block_size <= 0 ||
      shape.n_blocks <= 0) {
    return invalid_argument("kv cache: every size must be positive");
  }
  if (shape.type != DType::F16 && shape.type != DType::F32 && shape.type != DType::Q8_0) {
    return unsupported("kv cache: type " + std::string(dtype_name(shape.type)) + " (use f16, f32 or q8_0)");
  }
  if (shape.type == DType::Q8_0 && shape.head_dim % 32 != 0) {
    return invalid_argument("kv cache: q8_0 needs a head dimension that is a multiple of 32, not " +
                            std::to_string(shape.head_dim));
  }
  return {};
}

}  // namespace

Expected<std::unique_ptr<KvStorage>> CudaKvStorage::create(const KvCacheShape& shape, cudaStream_t stream) {
  PAGODA_TRY(check_shape(shape));
  const size_t token_bytes = shape.token_bytes();
  const size_t tokens = static_cast<size_t>(shape.n_blocks) * static_cast<size_t>(shape.block_size);
  if (tokens > (SIZE_MAX - kArrayAlignment) / token_bytes) return invalid_argument("kv cache: size overflows");
  const size_t array_bytes = (tokens * token_bytes + kArrayAlignment - 1) / kArrayAlignment * kArrayAlignment;
  const size_t arrays = 2 * static_cast<size_t>(shape.n_layers);
  if (array_bytes > SIZE_MAX / arrays) return invalid_argument("kv cache: size overflows");
  PAGODA_ASSIGN_OR_RETURN(DeviceMemory memory,
                          DeviceMemory::allocate(array_bytes * arrays, MemoryKind::kDevice, "the KV cache"));
  PAGODA_TRY(cuda_status(cudaMemsetAsync(memory.data(), 0, memory.size(), stream), "kv cache: cudaMemsetAsync"));
  return std::unique_ptr<KvStorage>(new CudaKvStorage(shape, std::move(memory), array_bytes));
}

TensorView CudaKvStorage::view(int32_t layer, int part) const {
  const int64_t row = static_cast<int64_t>(shape_.n_kv_heads) * shape_.head_dim;
  const int64_t tokens = static_cast<int64_t>(shape_.n_blocks) * shape_.block_size;
  if (layer < 0 || layer >= shape_.n_layers) return make_view(nullptr, shape_.type, row, tokens);
  char* base = static_cast<char*>(memory_.data());
  const size_t array_index = 2 * static_cast<size_t>(layer) + static_cast<size_t>(part);
  return make_view(base + array_index * array_bytes_, shape_.type, row, tokens);
}

}  // namespace pagoda::backend::cuda
