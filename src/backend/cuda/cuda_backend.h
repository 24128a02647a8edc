#pragma once
// The CUDA backend: weights, the KV cache and scratch in one NVIDIA GPU's memory, every
// Backend op as kernels (or cuBLAS) enqueued on one stream, synchronize() once per step.
// Built only with -DPAGODA_CUDA=ON; chosen at run time through backend::create.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"

namespace pagoda::backend {

struct CudaBackendOptions {
  int device = 0;  // CUDA device ordinal
  // Share of the GPU's memory that weights, the KV cache and scratch may take together
  // (vLLM's --gpu-memory-utilization); the KV cache gets what the rest leaves.
  double memory_utilization = 0.9;
  // Device scratch for one op's temporaries (dequantized weight tiles, f16 activations):
  // allocated once at creation; a larger op works in pieces.
  size_t workspace_bytes = size_t{256} << 20;
  // Pinned host memory and its device twin for one step's host inputs (token ids,
  // positions, block tables, KV slots), allocated once at creation.
  size_t staging_bytes = size_t{16} << 20;
};

// Number of CUDA devices this process sees; 0 when there is no driver or no device.
int cuda_device_count();

// Fails with the CUDA message when the device cannot be opened or the fixed buffers do
// not fit.
Expected<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options = {});

// Device allocations (cudaMalloc and cudaMallocHost) this process has made through the
// CUDA backend so far: tests check that a serving run adds none after load.
int64_t cuda_allocation_count();

}  // namespace pagoda::backend
