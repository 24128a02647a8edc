#pragma once
// What the GPU's own general matrix products reach on a model's shapes: cuBLAS in BF16
// (f32 accumulation) on random values, the floor a prompt's matmuls are measured
// against (Backend::measure_gemm_seconds).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <optional>
#include <span>

#include "backend/backend.h"

namespace pagoda::backend::cuda {

// Seconds of x [n_tokens][n_in] times every matrix of `shapes` (count of each): each
// distinct shape timed five times with events after two untimed runs, the median taken.
// Buffers for the largest shape are allocated for the measure and freed. nullopt when
// CUDA or cuBLAS refuses a step. `cublas` is bound to `stream` with its workspace set.
std::optional<double> measure_bf16_gemm_seconds(cublasHandle_t cublas, cudaStream_t stream,
                                                std::span<const Backend::GemmShape> shapes, int64_t n_tokens);

}  // namespace pagoda::backend::cuda
