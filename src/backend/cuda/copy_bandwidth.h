#pragma once
// The device's memory bandwidth as one large device-to-device copy moves it (bytes read
// plus bytes written per second): what memory-bound work such as decoding is measured
// against (Backend::measure_memory_bandwidth).

#include <cuda_runtime_api.h>

#include <optional>

namespace pagoda::backend::cuda {

// Ten copies of 1 GiB between two buffers allocated for the measure (and freed), timed
// with events on `stream` after one untimed copy; nullopt when CUDA refuses a step.
std::optional<double> measure_copy_bandwidth(cudaStream_t stream);

}  // namespace pagoda::backend::cuda
