#include "backend/cuda/view_copy.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_status.h"

namespace pagoda::backend::cuda {

Status copy_view_rows(const TensorView& view, void* host, cudaMemcpyKind kind, cudaStream_t stream) {
  const bool to_host = kind == cudaMemcpyDeviceToHost;
  const char* what = to_host ? "cuda: copy_to_host" : "cuda: copy_from_host";
  if (view.n_elements() == 0) return {};
  if (view.data == nullptr || host == nullptr) return invalid_argument(std::string(what) + ": null pointer");
  if (view.ne[0] % traits(view.type).block_size != 0) {
    return invalid_argument(std::string(what) + ": rows are not whole blocks of their type");
  }
  const size_t row = view.row_bytes();
  const int64_t n_rows = view.n_rows();
  char* rows = static_cast<char*>(view.data);
  char* bytes = static_cast<char*>(host);
  if (view.is_contiguous()) {
    const size_t total = row * static_cast<size_t>(n_rows);
    return cuda_status(to_host ? cudaMemcpyAsync(bytes, rows, total, kind, stream)
                               : cudaMemcpyAsync(rows, bytes, total, kind, stream),
                       std::string(what) + " (cudaMemcpyAsync)");
  }
  // Rows of a matrix follow each other at the pitch nb[1] (a column slice, a head view).
  const size_t pitch = view.ne[1] == 1 ? row : view.nb[1];
  if (pitch < row) return invalid_argument(std::string(what) + ": rows overlap (row stride below the row's bytes)");
  const size_t rows_per_matrix = static_cast<size_t>(view.ne[1]);
  for (int64_t i3 = 0; i3 < view.ne[3]; ++i3) {
    for (int64_t i2 = 0; i2 < view.ne[2]; ++i2) {
      char* matrix = rows + static_cast<size_t>(i2) * view.nb[2] + static_cast<size_t>(i3) * view.nb[3];
      char* packed = bytes + (static_cast<size_t>(i3 * view.ne[2] + i2) * rows_per_matrix) * row;
      const cudaError_t error = to_host ? cudaMemcpy2DAsync(packed, row, matrix, pitch, row, rows_per_matrix, kind, stream)
                                        : cudaMemcpy2DAsync(matrix, pitch, packed, row, row, rows_per_matrix, kind, stream);
      if (error != cudaSuccess) return cuda_status(error, std::string(what) + " (cudaMemcpy2DAsync)");
    }
  }
  return {};
}

}  // namespace pagoda::backend::cuda
