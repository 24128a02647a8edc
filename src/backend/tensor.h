#pragma once
// A non-owning view of a tensor in some backend's memory: where its bytes are, its
// element type and its shape. ne[0] is the contiguous dimension (a row), as in GGUF.
// nb[i] is the byte distance between consecutive indices of dimension i; a view of a
// column slice (e.g. the K part of a fused QKV row) keeps its parent's row stride.

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace pagoda::backend {

struct TensorView {
  void* data = nullptr;
  DType type = DType::F32;
  int64_t ne[4] = {1, 1, 1, 1};  // elements per dimension
  size_t nb[4] = {0, 0, 0, 0};   // bytes per step in each dimension (nb[0]: one block)

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  size_t row_bytes() const { return static_cast<size_t>(pagoda::row_bytes(type, ne[0])); }
  // True when rows follow each other without gaps.
  bool is_contiguous() const {
    return nb[1] == row_bytes() && nb[2] == nb[1] * ne[1] && nb[3] == nb[2] * ne[2];
  }
  template <typename T>
  T* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
    return reinterpret_cast<T*>(static_cast<char*>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3]);
  }
};

// A contiguous view of `data` with the given shape (unused trailing dims are 1).
inline TensorView make_view(void* data, DType type, int64_t ne0, int64_t ne1 = 1,
                            int64_t ne2 = 1, int64_t ne3 = 1) {
  TensorView v;
  v.data = data;
  v.type = type;
  v.ne[0] = ne0;
  v.ne[1] = ne1;
  v.ne[2] = ne2;
  v.ne[3] = ne3;
  const DTypeTraits& t = traits(type);
  v.nb[0] = static_cast<size_t>(t.type_size);
  v.nb[1] = static_cast<size_t>(pagoda::row_bytes(type, ne0));
  v.nb[2] = v.nb[1] * static_cast<size_t>(ne1);
  v.nb[3] = v.nb[2] * static_cast<size_t>(ne2);
  return v;
}

// Columns [first, first + count) of every row of an f32 matrix view (same row stride).
inline TensorView column_slice(const TensorView& m, int64_t first, int64_t count) {
  TensorView v = m;
  v.data = static_cast<char*>(m.data) + first * static_cast<int64_t>(m.nb[0]);
  v.ne[0] = count;
  return v;
}

// Reinterprets a contiguous-row view [ne0 * ne1', ...] as [ne0, ne1, ...] heads: a
// [n_tokens, n_heads * head_dim] matrix becomes [head_dim, n_heads, n_tokens].
inline TensorView split_rows_into_heads(const TensorView& m, int64_t head_dim) {
  TensorView v = m;
  v.ne[0] = head_dim;
  v.ne[1] = m.ne[0] / head_dim;
  v.ne[2] = m.ne[1];
  v.ne[3] = 1;
  v.nb[1] = static_cast<size_t>(pagoda::row_bytes(m.type, head_dim));
  v.nb[2] = m.nb[1];
  v.nb[3] = m.nb[1] * static_cast<size_t>(m.ne[1]);
  return v;
}

}  // namespace pagoda::backend
