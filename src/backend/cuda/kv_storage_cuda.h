#pragma once
// The KV cache in device memory: per layer a K and a V array of
// [n_blocks * block_size] token rows of [n_kv_heads * head_dim] values of shape.type
// (kv_storage.h), all 2 * n_layers arrays in one allocation made once, zeroed.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "backend/backend.h"
#include "backend/cuda/device_memory.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

class CudaKvStorage final : public KvStorage {
 public:
  // Checks the shape (positive sizes; F16, F32 or Q8_0; Q8_0 needs head_dim % 32 == 0),
  // allocates, and zeroes the memory on `stream` (so that no op ever reads bytes that
  // were never written as a NaN).
  static Expected<std::unique_ptr<KvStorage>> create(const KvCacheShape& shape, cudaStream_t stream);

  const KvCacheShape& shape() const override { return shape_; }
  // A layer outside [0, n_layers) gives an empty view (data null): callers check first.
  TensorView keys(int32_t layer) override { return view(layer, 0); }
  TensorView values(int32_t layer) override { return view(layer, 1); }

  // Bytes of one block of one array: block_size consecutive token rows.
  size_t block_bytes() const { return shape_.token_bytes() * static_cast<size_t>(shape_.block_size); }

 private:
  CudaKvStorage(const KvCacheShape& shape, DeviceMemory memory, size_t array_bytes)
      : shape_(shape), memory_(std::move(memory)), array_bytes_(array_bytes) {}
  // part 0: K, 1: V.
  TensorView view(int32_t layer, int part) const;

  KvCacheShape shape_;
  DeviceMemory memory_;  // 2 * n_layers arrays of array_bytes_: layer l's K at 2l, V at 2l + 1
  size_t array_bytes_;   // bytes of one array, a multiple of 256
};

}  // namespace pagoda::backend::cuda
