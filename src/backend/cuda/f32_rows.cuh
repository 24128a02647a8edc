#pragma once
// Internal to the CUDA ops: the rows of an f32 TensorView as kernels address them, the
// host-side view checks the elementwise, norm and rope ops share, and the launch error as
// a Status.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/tensor.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

// The rows of an f32 view with up to three row dimensions, numbered row-major over
// (ne[1], ne[2], ne[3]): row r is (r % ne1, (r / ne1) % ne2, r / (ne1 * ne2)), as the CPU
// backend numbers them (so head views [head_dim][n_heads][n_tokens] work too).
struct F32Rows {
  char* data;
  int64_t ne1, ne2;
  int64_t nb1, nb2, nb3;  // bytes

  __device__ float* row(int64_t r) const {
    const int64_t i1 = r % ne1, rest = r / ne1;
    return reinterpret_cast<float*>(data + i1 * nb1 + (rest % ne2) * nb2 + (rest / ne2) * nb3);
  }
};

inline F32Rows rows_of(const TensorView& v) {
  return {static_cast<char*>(v.data), v.ne[1], v.ne[2], static_cast<int64_t>(v.nb[1]),
          static_cast<int64_t>(v.nb[2]), static_cast<int64_t>(v.nb[3])};
}

// f32 values, contiguous within each row, every row 4-byte aligned (rows may be strided).
inline bool is_f32_rows(const TensorView& v) {
  const bool aligned = reinterpret_cast<uintptr_t>(v.data) % sizeof(float) == 0 &&
                       v.nb[1] % sizeof(float) == 0 && v.nb[2] % sizeof(float) == 0 &&
                       v.nb[3] % sizeof(float) == 0;
  return v.data != nullptr && v.type == DType::F32 && v.nb[0] == sizeof(float) && aligned &&
         v.ne[0] >= 0 && v.ne[1] >= 0 && v.ne[2] >= 0 && v.ne[3] >= 0;
}

inline bool same_shape(const TensorView& a, const TensorView& b) {
  return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

// One contiguous row of n values of `type` (a weight vector: norm weights, biases).
inline bool is_vector(const TensorView& v, DType type, int64_t n) {
  return v.data != nullptr && v.type == type && v.ne[0] == n && v.n_rows() == 1 &&
         reinterpret_cast<uintptr_t>(v.data) % (type == DType::F32 ? 4 : 2) == 0;
}

// Threads per block for a block that walks one row of n values: whole warps, at most
// 256, so that short rows do not leave most of the block idle.
inline int threads_for_row(int64_t n) {
  const int64_t warps = (n + 31) / 32;
  return static_cast<int>(warps < 1 ? 32 : (warps > 8 ? 256 : warps * 32));
}

// Largest grid x dimension: rows beyond it would need a second dimension.
inline constexpr int64_t kMaxGridX = 2147483647;

// The error of the kernels just enqueued (a bad configuration, or an earlier fault).
inline Status launch_status(const char* op) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return {};
  return internal_error(std::string(op) + ": " + cudaGetErrorString(e));
}

}  // namespace pagoda::backend::cuda
