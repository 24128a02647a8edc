#include "backend/registry/registry.h"

#include <string>

#include "backend/cpu/cpu_backend.h"
#if PAGODA_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace pagoda::backend {
namespace {

int visible_cuda_devices() {
#if PAGODA_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

Expected<std::unique_ptr<Backend>> create_cuda(const BackendOptions& options, int index) {
#if PAGODA_HAVE_CUDA
  const int n_devices = cuda_device_count();
  if (n_devices == 0) return unsupported("device cuda:" + std::to_string(index) + ": no CUDA device found");
  if (index >= n_devices) {
    return unsupported("device cuda:" + std::to_string(index) + ": there are " +
                       std::to_string(n_devices) + " CUDA devices (cuda:0..cuda:" +
                       std::to_string(n_devices - 1) + ")");
  }
  CudaBackendOptions cuda = options.cuda;
  cuda.device = index;
  return make_cuda_backend(cuda);
#else
  (void)options;
  return unsupported("device cuda:" + std::to_string(index) +
                     ": this build of pagoda has no CUDA backend (configure with -DPAGODA_CUDA=ON "
                     "on a machine with the CUDA toolkit)");
#endif
}

}  // namespace

bool cuda_built() {
#if PAGODA_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

DeviceSpec resolve_device(const DeviceSpec& spec) {
  if (spec.kind != DeviceKind::kAuto) return spec;
  DeviceSpec resolved;
  resolved.kind = visible_cuda_devices() > 0 ? DeviceKind::kCuda : DeviceKind::kCpu;
  return resolved;
}

Expected<std::unique_ptr<Backend>> create(const BackendOptions& options) {
  const DeviceSpec device = resolve_device(options.device);
  if (device.kind == DeviceKind::kCuda) return create_cuda(options, device.index);
  return make_cpu_backend(options.cpu);
}

}  // namespace pagoda::backend
