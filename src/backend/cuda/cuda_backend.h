#pragma once
// The CUDA backend: weights, the KV cache and scratch in one NVIDIA GPU's memory, every
// Backend op as kernels (or cuBLAS) enqueued on one stream, synchronize() once per step.
// Built only with -DPAGODA_CUDA=ON; chosen at run time through backend::create.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "core/status.h"

namespace pagoda::backend {

// Number of CUDA devices this process sees; 0 when there is no driver or no device.
int cuda_device_count();

// Fails with the CUDA message when the device cannot be opened or the fixed buffers do
// not fit.
Expected<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options = {});

// How a CUDA backend's steps ran so far (cuda/step_graphs.h): replayed as a graph,
// graphs captured, op by op. All zero for another backend.
struct CudaGraphCounts {
  uint64_t replayed = 0;
  uint64_t captured = 0;
  uint64_t one_by_one = 0;
};
CudaGraphCounts cuda_graph_counts(const Backend& backend);

// Device allocations (cudaMalloc and cudaMallocHost) this process has made through the
// CUDA backend so far: tests check that a serving run adds none after load.
int64_t cuda_allocation_count();

}  // namespace pagoda::backend
