#pragma once
// Copies between a view of device memory and host memory holding its rows back to back,
// enqueued on a stream: what Backend::copy_to_host and copy_from_host do.

#include <cuda_runtime_api.h>

#include "backend/tensor.h"
#include "core/status.h"

namespace pagoda::backend::cuda {

// Copies the rows of `view` (device memory, rows of view.row_bytes() at strides nb[1..3])
// to `host` (kind cudaMemcpyDeviceToHost) or from it (cudaMemcpyHostToDevice): one copy
// for a contiguous view, else one 2D copy per matrix of the view. From or to pageable
// host memory, CUDA has read (or written) the host bytes when the call returns; to or
// from pinned memory, once the stream gets there.
Status copy_view_rows(const TensorView& view, void* host, cudaMemcpyKind kind, cudaStream_t stream);

}  // namespace pagoda::backend::cuda
