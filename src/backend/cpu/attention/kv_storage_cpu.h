#pragma once
// The KV cache in host memory: per layer, a K and a V array of
// [n_blocks * block_size] token rows of [n_kv_heads * head_dim] values of shape.type,
// all in one aligned allocation made once.

#include <cassert>
#include <memory>

#include "backend/backend.h"
#include "backend/cpu/aligned_memory.h"
#include "core/status.h"

namespace pagoda::backend::cpu {

class CpuKvStorage final : public KvStorage {
 public:
  // Checks the shape (positive sizes; F16, F32 or Q8_0; Q8_0 needs head_dim % 32 == 0)
  // and allocates.
  static Expected<std::unique_ptr<KvStorage>> create(const KvCacheShape& shape);

  const KvCacheShape& shape() const override { return shape_; }
  TensorView keys(int32_t layer) override {
    assert(layer >= 0 && layer < shape_.n_layers);
    return view(2 * static_cast<size_t>(layer));
  }
  TensorView values(int32_t layer) override {
    assert(layer >= 0 && layer < shape_.n_layers);
    return view(2 * static_cast<size_t>(layer) + 1);
  }

 private:
  CpuKvStorage(const KvCacheShape& shape, AlignedPtr data, size_t array_bytes)
      : shape_(shape), data_(std::move(data)), array_bytes_(array_bytes) {}
  TensorView view(size_t array_index) const;

  KvCacheShape shape_;
  AlignedPtr data_;
  size_t array_bytes_;  // bytes of one layer's K (or V) array, a multiple of 64
};

}  // namespace pagoda::backend::cpu
