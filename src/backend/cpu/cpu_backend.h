#pragma once
// The CPU backend: host memory, every Backend op threaded over a fixed pool, SIMD kernels
// chosen at run time for the CPU it runs on.

#include <memory>

#include "backend/backend.h"
#include "backend/backend_options.h"

namespace pagoda::backend {

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options = {});

}  // namespace pagoda::backend
