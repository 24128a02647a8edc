#pragma once
// The one place a backend is chosen: front ends fill a BackendOptions (the device and
// each backend's settings) and call create(); nothing above this layer names a backend
// implementation.

#include <memory>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "core/status.h"

namespace pagoda::backend {

// Whether this build has the CUDA backend.
bool cuda_built();

// What `spec` means on this machine: auto becomes cuda:0 when this build has the CUDA
// backend and sees a GPU, else cpu; cpu and cuda:N stay as they are.
DeviceSpec resolve_device(const DeviceSpec& spec);

// Makes the backend options.device names. Asking for cuda in a build without it, or
// on a machine without a GPU (or without device N), fails with one line saying which.
Expected<std::unique_ptr<Backend>> create(const BackendOptions& options);

}  // namespace pagoda::backend
