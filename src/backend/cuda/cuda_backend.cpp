#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cuda/copy_bandwidth.h"
#include "backend/cuda/cuda_backend_class.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/gemm_bound.h"
#include "backend/cuda/kv_storage_cuda.h"
#include "backend/cuda/view_copy.h"

namespace pagoda::backend::cuda {
namespace {

// cuBLAS's workspace, ours so that it allocates nothing as it runs (NVIDIA recommends
// 32 MiB on Hopper, which covers the smaller needs of earlier GPUs).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// The device each thread last made current through make_current: most calls need no
// cudaSetDevice. Only this file changes a thread's device in the process.
thread_local int t_current_device = -1;

cudaError_t make_current(int device) {
  if (t_current_device == device) return cudaSuccess;
  const cudaError_t error = cudaSetDevice(device);
  t_current_device = error == cudaSuccess ? device : -1;
  return error;
}

// Whether environment variable `name` is set to `value` (the switches that take a path
// out, to compare the paths: README, "Building by hand").
bool environment_says(const char* name, std::string_view value) {
  const char* set = std::getenv(name);
  return set != nullptr && value == set;
}

}  // namespace

std::string CudaBackend::step_summary() const {
  if (!graphs_enabled_) return "cuda graphs: off (every op launched as it is called)";
  const StepGraphs::Counts& c = graphs_.counts();
  return "cuda graphs: " + std::to_string(c.replayed) + " steps replayed, " + std::to_string(c.captured) +
         " graphs captured, " + std::to_string(c.one_by_one) + " steps run op by op";
}

void CudaBackend::flush() {
  if (graphs_.empty()) return;
  if (!ready()) return graphs_.discard();
  Status uploaded = staging_.upload();
  if (!uploaded.ok()) {
    graphs_.discard();
    return note(std::move(uploaded));
  }
  note(graphs_.run(stream_.stream));
}

Status CudaBackend::open_device() {
  if (!(options_.memory_utilization > 0.0 && options_.memory_utilization <= 1.0)) {
    return invalid_argument("cuda: memory utilization must be in (0, 1], not " +
                            std::to_string(options_.memory_utilization));
  }
  int count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (count_error != cudaSuccess) {
    return unsupported(cuda_message(count_error, "cuda: no usable device (cudaGetDeviceCount)") +
                       "; this process sees 0 CUDA devices");
  }
  const cudaError_t error = make_current(device_);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return not_found(cuda_message(error, "cuda: cannot use device " + std::to_string(device_) +
                                             " (cudaSetDevice)") +
                     "; this process sees " + std::to_string(count) + " CUDA device" +
                     (count == 1 ? "" : "s"));
  }
  cudaDeviceProp properties{};
  PAGODA_TRY(
      cuda_status(cudaGetDeviceProperties(&properties, device_), "cuda: cudaGetDeviceProperties"));
  device_name_ = properties.name;
  total_memory_ = properties.totalGlobalMem;
  ctx_.sm_count = properties.multiProcessorCount;
  ctx_.cc_major = properties.major;
  ctx_.cc_minor = properties.minor;
  ctx_.shared_memory_optin = properties.sharedMemPerBlockOptin;
  return {};
}

Status CudaBackend::create_fixed_buffers() {
  PAGODA_TRY(cuda_status(cudaStreamCreateWithFlags(&stream_.stream, cudaStreamNonBlocking),
                         "cuda: cudaStreamCreateWithFlags"));
  PAGODA_TRY(cublas_status(cublasCreate(&cublas_.handle), "cuda: cublasCreate"));
  PAGODA_TRY(
      cublas_status(cublasSetStream(cublas_.handle, stream_.stream), "cuda: cublasSetStream"));
  PAGODA_ASSIGN_OR_RETURN(
      cublas_workspace_,
      DeviceMemory::allocate(kCublasWorkspaceBytes, MemoryKind::kDevice, "cuBLAS's workspace"));
  PAGODA_TRY(cublas_status(
      cublasSetWorkspace(cublas_.handle, cublas_workspace_.data(), cublas_workspace_.size()),
      "cuda: cublasSetWorkspace"));
  PAGODA_ASSIGN_OR_RETURN(
      workspace_memory_,
      DeviceMemory::allocate(options_.workspace_bytes, MemoryKind::kDevice, "the ops' workspace"));
  workspace_ = Workspace(workspace_memory_.data(), workspace_memory_.size());
  PAGODA_ASSIGN_OR_RETURN(staging_, StepStaging::create(options_.staging_bytes, stream_.stream));
  ctx_.stream = stream_.stream;
  ctx_.cublas = cublas_.handle;
  ctx_.workspace = &workspace_;
  ctx_.batch_invariant = options_.batch_invariant;
  ctx_.vec_kernel = environment_says("PAGODA_CUDA_MATVEC", "rowwise")  ? VecKernel::kRowwise
                    : environment_says("PAGODA_CUDA_MATVEC", "staged") ? VecKernel::kStaged
                                                                       : VecKernel::kPieces;
  ctx_.programmatic_launch = ctx_.cc_major >= 9 && !environment_says("PAGODA_CUDA_PDL", "0");
  ctx_.attention_row_groups = !environment_says("PAGODA_CUDA_ATTENTION_GROUPS", "0");
  ctx_.attention_tensor_cores = ctx_.cc_major >= 8 && !environment_says("PAGODA_CUDA_ATTENTION", "scalar");
  ctx_.quantized_in_integers = !environment_says("PAGODA_CUDA_INTEGER_DOTS", "0");
  const int host_threads = options_.host_threads > 0 ? options_.host_threads : std::min(physical_core_count(), 8);
  host_pool_ = std::make_unique<ThreadPool>(host_threads);
  graphs_enabled_ = options_.graphs && !options_.profile_ops && !environment_says("PAGODA_CUDA_GRAPHS", "0");
  PAGODA_TRY(prepare_attention(ctx_));
  // Events for the ops of the largest step (a few dozen per layer).
  if (options_.profile_ops) PAGODA_TRY(profile_.start(16384));
  return {};
}

bool CudaBackend::select_device() const {
  if (make_current(device_) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

Status CudaBackend::usable() const {
  if (!fault_.empty()) {
    return internal_error("cuda:" + std::to_string(device_) +
                          " failed earlier and cannot run anything more (" + fault_ +
                          "); the process must be restarted to use the GPU again");
  }
  if (!select_device()) {
    return internal_error("cuda: cannot make device " + std::to_string(device_) +
                          " current (cudaSetDevice)");
  }
  return {};
}

void CudaBackend::note(Status status) {
  if (status.ok()) return;
  if (error_.ok()) error_ = std::move(status);
  // A failed launch may be a fault of an earlier kernel surfacing: ask the stream.
  if (fault_.empty() && stream_.stream != nullptr) {
    const cudaError_t state = cudaStreamQuery(stream_.stream);
    if (state != cudaSuccess && state != cudaErrorNotReady) detect_fault(state, "an op");
  }
}

void CudaBackend::detect_fault(cudaError_t error, const char* where) {
  if (error == cudaSuccess || !fault_.empty()) return;
  cudaGetLastError();  // clears a non-sticky error; a sticky one stays and shows again
  const cudaError_t again = cudaStreamQuery(stream_.stream);
  if (is_sticky(error) || (again != cudaSuccess && again != cudaErrorNotReady)) {
    fault_ = cuda_message(error, std::string("at ") + where);
  }
}

Expected<TensorView> CudaBackend::upload_weight(const TensorView& host) {
  flush();
  PAGODA_TRY(usable());
  if (host.data == nullptr || host.n_elements() == 0) return host;
  if (!host.is_contiguous()) {
    return unsupported("cuda: upload_weight needs a contiguous tensor (rows without gaps)");
  }
  const size_t bytes = host.nb[3] * static_cast<size_t>(host.ne[3]);
  PAGODA_ASSIGN_OR_RETURN(DeviceMemory memory,
                          DeviceMemory::allocate(bytes, MemoryKind::kDevice, "a weight"));
  // From pageable (mapped) memory the copy has read the source when the call returns.
  const cudaError_t error =
      cudaMemcpyAsync(memory.data(), host.data, bytes, cudaMemcpyHostToDevice, stream_.stream);
  if (error != cudaSuccess) {
    detect_fault(error, "upload_weight");
    return cuda_status(
        error, "cuda: upload_weight (cudaMemcpyAsync of " + std::to_string(bytes) + " bytes)");
  }
  TensorView device = host;
  device.data = memory.data();
  weights_.push_back(std::move(memory));
  return device;
}

std::optional<Backend::CacheMemory> CudaBackend::cache_memory() const {
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t error =
      select_device() ? cudaMemGetInfo(&free_bytes, &total_bytes) : cudaErrorInvalidDevice;
  if (error != cudaSuccess) {
    cudaGetLastError();
    return CacheMemory{0, cuda_message(error, "cudaMemGetInfo")};
  }
  // What the utilization bound leaves after everything already on the device (our
  // weights and scratch, the CUDA context, other processes).
  const auto bound = static_cast<uint64_t>(
      std::floor(options_.memory_utilization * static_cast<double>(total_bytes)));
  const uint64_t in_use = total_bytes - free_bytes;
  const uint64_t bytes = bound > in_use ? bound - in_use : 0;
  char percent[32];
  std::snprintf(percent, sizeof percent, "%g%%", options_.memory_utilization * 100.0);
  return CacheMemory{bytes, std::string(percent) + " of " + format_bytes(total_bytes) + " less " +
                                format_bytes(in_use) + " in use (" +
                                format_bytes(live_device_bytes()) +
                                " of it Pagoda's weights, buffers and scratch)"};
}

void CudaBackend::copy_kv_blocks(KvStorage& kv, std::span<const KvBlockCopy> copies) {
  flush();
  if (!ready()) return;
  auto* storage = dynamic_cast<CudaKvStorage*>(&kv);
  if (storage == nullptr)
    return note(invalid_argument("cuda: copy_kv_blocks needs a KV cache of this backend"));
  const KvCacheShape& shape = storage->shape();
  for (const KvBlockCopy& copy : copies) {
    if (copy.src < 0 || copy.src >= shape.n_blocks || copy.dst < 0 || copy.dst >= shape.n_blocks) {
      return note(invalid_argument("kv block copy " + std::to_string(copy.src) + " -> " +
                                   std::to_string(copy.dst) + " is outside the " +
                                   std::to_string(shape.n_blocks) + " blocks of the cache"));
    }
  }
  const size_t block_bytes = storage->block_bytes();
  for (int32_t layer = 0; layer < shape.n_layers; ++layer) {
    for (const TensorView& array : {storage->keys(layer), storage->values(layer)}) {
      char* base = static_cast<char*>(array.data);
      for (const KvBlockCopy& copy : copies) {
        if (copy.src == copy.dst) continue;
        const cudaError_t error =
            cudaMemcpyAsync(base + static_cast<size_t>(copy.dst) * block_bytes,
                            base + static_cast<size_t>(copy.src) * block_bytes, block_bytes,
                            cudaMemcpyDeviceToDevice, stream_.stream);
        if (error != cudaSuccess)
          return note(cuda_status(error, "cuda: copy_kv_blocks (cudaMemcpyAsync)"));
      }
    }
  }
}

void CudaBackend::synchronize() {
  flush();
  if (!ready()) {
    staging_.reset();
    return;
  }
  const cudaError_t error = cudaStreamSynchronize(stream_.stream);
  if (error != cudaSuccess) {
    detect_fault(error, "synchronize");
    note(cuda_status(error, "cuda: a kernel or copy of this step failed (cudaStreamSynchronize)"));
  }
  // The stream is idle (or dead): nothing reads the staged inputs any more.
  staging_.reset();
  if (error == cudaSuccess) profile_.collect();
}

std::optional<double> CudaBackend::measure_gemm_seconds(std::span<const GemmShape> shapes, int64_t n_tokens) {
  flush();
  if (!ready()) return std::nullopt;
  return measure_bf16_gemm_seconds(cublas_.handle, stream_.stream, shapes, n_tokens);
}

std::optional<Backend::MemoryBandwidth> CudaBackend::measure_memory_bandwidth() {
  flush();
  if (!ready()) return std::nullopt;
  const std::optional<double> bytes_per_second = measure_copy_bandwidth(stream_.stream);
  if (!bytes_per_second) return std::nullopt;
  return MemoryBandwidth{*bytes_per_second, "1 GiB device copy, read + write"};
}

}  // namespace pagoda::backend::cuda

namespace pagoda::backend {

int cuda_device_count() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  // No driver or no device: not an error of whatever the thread launches next.
  cudaGetLastError();
  return error == cudaSuccess ? count : 0;
}

CudaGraphCounts cuda_graph_counts(const Backend& backend) {
  const auto* cuda = dynamic_cast<const cuda::CudaBackend*>(&backend);
  if (cuda == nullptr) return {};
  const cuda::StepGraphs::Counts& c = cuda->graph_counts();
  return {c.replayed, c.captured, c.one_by_one};
}

Expected<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options) {
  return cuda::CudaBackend::create(options);
}

}  // namespace pagoda::backend
