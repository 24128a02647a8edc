#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/context.h"
#include "backend/cuda/copy_bandwidth.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/kv_storage_cuda.h"
#include "backend/cuda/op_profile.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/step_staging.h"
#include "backend/cuda/view_copy.h"

namespace pagoda::backend {
namespace {

using cuda::cuda_status;

// cuBLAS's workspace, ours so that it allocates nothing as it runs (NVIDIA recommends
// 32 MiB on Hopper, which covers the smaller needs of earlier GPUs).
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// Owners of the stream and the cuBLAS handle (null until created).
struct StreamOwner {
  cudaStream_t stream = nullptr;
  StreamOwner() = default;
  StreamOwner(const StreamOwner&) = delete;
  StreamOwner& operator=(const StreamOwner&) = delete;
  ~StreamOwner() {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};
struct CublasOwner {
  cublasHandle_t handle = nullptr;
  CublasOwner() = default;
  CublasOwner(const CublasOwner&) = delete;
  CublasOwner& operator=(const CublasOwner&) = delete;
  ~CublasOwner() {
    if (handle != nullptr) cublasDestroy(handle);
  }
};

// The device each thread last made current through make_current: most calls need no
// cudaSetDevice. Only this file changes a thread's device in the process.
thread_local int t_current_device = -1;

cudaError_t make_current(int device) {
  if (t_current_device == device) return cudaSuccess;
  const cudaError_t error = cudaSetDevice(device);
  t_current_device = error == cudaSuccess ? device : -1;
  return error;
}

class CudaBackend final : public Backend {
 public:
  static Expected<std::unique_ptr<Backend>> create(const CudaBackendOptions& options) {
    std::unique_ptr<CudaBackend> backend(new CudaBackend(options));
    PAGODA_TRY(backend->open_device());
    PAGODA_TRY(backend->create_fixed_buffers());
    return std::unique_ptr<Backend>(std::move(backend));
  }

  ~CudaBackend() override {
    // Nothing pending may still use the memory freed below; errors no longer matter.
    if (stream_.stream != nullptr && select_device()) cudaStreamSynchronize(stream_.stream);
    cudaGetLastError();
  }

  std::string name() const override {
    return "cuda:" + std::to_string(device_) + " (" + device_name_ + ", sm_" + std::to_string(ctx_.cc_major) +
           std::to_string(ctx_.cc_minor) + ", " + cuda::format_bytes(total_memory_) + ")";
  }

  // --- memory -----------------------------------------------------------------------
  Expected<std::unique_ptr<Buffer>> allocate(size_t bytes) override {
    PAGODA_TRY(usable());
    PAGODA_ASSIGN_OR_RETURN(cuda::DeviceMemory memory,
                            cuda::DeviceMemory::allocate(bytes, cuda::MemoryKind::kDevice, "a buffer"));
    return std::unique_ptr<Buffer>(new cuda::CudaBuffer(std::move(memory)));
  }
  Expected<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheShape& shape) override {
    PAGODA_TRY(usable());
    return cuda::CudaKvStorage::create(shape, stream_.stream);
  }
  Expected<TensorView> upload_weight(const TensorView& host) override;
  std::optional<CacheMemory> cache_memory() const override;

  // --- copies -------------------------------------------------------------------------
  void copy_to_host(const TensorView& src, void* dst) override {
    if (ready()) note(cuda::copy_view_rows(src, dst, cudaMemcpyDeviceToHost, stream_.stream));
  }
  void copy_from_host(const void* src, const TensorView& dst) override {
    if (ready()) note(cuda::copy_view_rows(dst, const_cast<void*>(src), cudaMemcpyHostToDevice, stream_.stream));
  }
  void copy_kv_blocks(KvStorage& kv, std::span<const KvBlockCopy> copies) override;
  void synchronize() override;
  std::optional<MemoryBandwidth> measure_memory_bandwidth() override;
  std::vector<OpTime> op_times() const override { return profile_.totals(); }
  void reset_op_times() override { profile_.reset(); }
  Status take_error() override { return std::exchange(error_, Status{}); }
  Status health() const override { return usable(); }

  // --- ops ----------------------------------------------------------------------------
  void get_rows(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) override {
    if (!ready()) return;
    // The kernels trust the ids: an id outside the table is refused here, on the host.
    for (const int32_t id : ids) {
      if (id < 0 || id >= table.n_rows()) {
        return note(invalid_argument("get_rows: id " + std::to_string(id) + " is outside the table's " +
                                     std::to_string(table.n_rows()) + " rows"));
      }
    }
    Expected<const int32_t*> device_ids = staging_.stage(ids);
    if (!device_ids.ok()) return note(device_ids.status());
    run_op([&] { return cuda::get_rows(ctx_, table, *device_ids, static_cast<int64_t>(ids.size()), out); },
           [] { return std::string("get_rows"); });
  }
  void matmul(const TensorView& w, const TensorView& x, const TensorView& y) override {
    run_op([&] { return cuda::matmul(ctx_, w, x, y); },
           [&] { return "matmul " + std::string(dtype_name(w.type)) + " " + std::to_string(w.ne[0]) + "->" +
                        std::to_string(w.ne[1]) + " n=" + std::to_string(x.n_rows()); });
  }
  // "matmul q4_K 2048->2048+512+512 n=1" (the types of the first weight).
  static std::string matmuls_name(const TensorView& x, std::span<const MatmulTarget> targets) {
    std::string name = "matmul ";
    if (targets.empty()) return name;
    name += dtype_name(targets[0].w.type);
    name += " " + std::to_string(targets[0].w.ne[0]) + "->";
    for (size_t i = 0; i < targets.size(); ++i) {
      if (i > 0) name += "+";
      name += std::to_string(targets[i].w.ne[1]);
    }
    return name + " n=" + std::to_string(x.n_rows());
  }
  void matmuls(const TensorView& x, std::span<const MatmulTarget> targets) override {
    run_op([&] { return cuda::matmuls(ctx_, x, targets); }, [&] { return matmuls_name(x, targets); });
  }
  void matmuls_swiglu(const TensorView& x, const TensorView& w_gate, const TensorView& w_up, const TensorView& gate,
                      const TensorView& up, const TensorView& out) override {
    run_op([&] { return cuda::matmuls_swiglu(ctx_, x, w_gate, w_up, gate, up, out); }, [&] {
      const MatmulTarget pair[] = {{w_gate, gate}, {w_up, up}};
      return matmuls_name(x, pair) + " swiglu";
    });
  }
  void add_bias(const TensorView& y, const TensorView& bias) override {
    run_op([&] { return cuda::add_bias(ctx_, y, bias); }, [] { return std::string("add_bias"); });
  }
  void add(const TensorView& a, const TensorView& b, const TensorView& out) override {
    run_op([&] { return cuda::add(ctx_, a, b, out); }, [] { return std::string("add"); });
  }
  void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& y) override {
    run_op([&] { return cuda::rms_norm(ctx_, x, weight, eps, y); }, [] { return std::string("rms_norm"); });
  }
  void add_rms_norm(const TensorView& x, const TensorView& delta, const TensorView& weight, float eps,
                    const TensorView& y) override {
    run_op([&] { return cuda::add_rms_norm(ctx_, x, delta, weight, eps, y); },
           [] { return std::string("add_rms_norm"); });
  }
  void layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                  const TensorView& y) override {
    run_op([&] { return cuda::layer_norm(ctx_, x, weight, bias, eps, y); }, [] { return std::string("layer_norm"); });
  }
  void rope(const TensorView& x, std::span<const int32_t> positions, const RopeParams& params) override;
  void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& out) override {
    run_op([&] { return cuda::silu_mul(ctx_, gate, up, out); }, [] { return std::string("silu_mul"); });
  }
  void gelu(const TensorView& x) override {
    run_op([&] { return cuda::gelu(ctx_, x); }, [] { return std::string("gelu"); });
  }
  void attention(const TensorView& q, const TensorView& k, const TensorView& v, KvStorage& kv, int32_t layer,
                 const AttentionBatch& batch, float scale, const TensorView& out) override;

 private:
  explicit CudaBackend(const CudaBackendOptions& options) : options_(options), device_(options.device) {}

  Status open_device();
  Status create_fixed_buffers();

  // Makes device_ the calling thread's current device (the engine's step loop runs on a
  // thread of its own); false when CUDA refuses (its error cleared).
  bool select_device() const;
  // ok when the device can take work: selected, and no fault has broken its context.
  Status usable() const;
  // Enqueues an op (launch() returns its Status) between the profile's events, if the
  // device can take work; name() names it in the profile.
  template <typename Launch, typename Name>
  void run_op(Launch&& launch, Name&& name) {
    if (!ready()) return;
    profile_.begin(stream_.stream);
    note(launch());
    if (profile_.enabled()) profile_.end(stream_.stream, name());
  }
  // usable(), else notes why and returns false: the op is not launched.
  bool ready() {
    Status status = usable();
    if (status.ok()) return true;
    note(std::move(status));
    return false;
  }
  // Keeps the first error for take_error(), and checks whether the device has faulted.
  void note(Status status);
  // After `error`, whether it left the context unusable (a kernel fault is sticky).
  void detect_fault(cudaError_t error, const char* where);

  CudaBackendOptions options_;
  int device_;
  std::string device_name_;
  uint64_t total_memory_ = 0;  // bytes of device memory
  // Members are destroyed in reverse order: the handle before its workspace and stream.
  StreamOwner stream_;
  cuda::DeviceMemory cublas_workspace_;
  CublasOwner cublas_;
  cuda::DeviceMemory workspace_memory_;
  cuda::Workspace workspace_;
  cuda::StepStaging staging_;
  cuda::OpProfile profile_;  // per-op device time, when options_.profile_ops
  std::vector<cuda::DeviceMemory> weights_;  // one allocation per uploaded weight
  cuda::Context ctx_;
  Status error_;          // first error since the last take_error()
  std::string fault_;     // the sticky fault that broke the context; empty while usable
};

Status CudaBackend::open_device() {
  if (!(options_.memory_utilization > 0.0 && options_.memory_utilization <= 1.0)) {
    return invalid_argument("cuda: memory utilization must be in (0, 1], not " +
                            std::to_string(options_.memory_utilization));
  }
  int count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (count_error != cudaSuccess) {
    return unsupported(cuda::cuda_message(count_error, "cuda: no usable device (cudaGetDeviceCount)") +
                       "; this process sees 0 CUDA devices");
  }
  const cudaError_t error = make_current(device_);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return not_found(cuda::cuda_message(error, "cuda: cannot use device " + std::to_string(device_) +
                                                   " (cudaSetDevice)") +
                     "; this process sees " + std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s"));
  }
  cudaDeviceProp properties{};
  PAGODA_TRY(cuda_status(cudaGetDeviceProperties(&properties, device_), "cuda: cudaGetDeviceProperties"));
  device_name_ = properties.name;
  total_memory_ = properties.totalGlobalMem;
  ctx_.sm_count = properties.multiProcessorCount;
  ctx_.cc_major = properties.major;
  ctx_.cc_minor = properties.minor;
  return {};
}

Status CudaBackend::create_fixed_buffers() {
  PAGODA_TRY(cuda_status(cudaStreamCreateWithFlags(&stream_.stream, cudaStreamNonBlocking),
                         "cuda: cudaStreamCreateWithFlags"));
  PAGODA_TRY(cuda::cublas_status(cublasCreate(&cublas_.handle), "cuda: cublasCreate"));
  PAGODA_TRY(cuda::cublas_status(cublasSetStream(cublas_.handle, stream_.stream), "cuda: cublasSetStream"));
  PAGODA_ASSIGN_OR_RETURN(cublas_workspace_, cuda::DeviceMemory::allocate(kCublasWorkspaceBytes, cuda::MemoryKind::kDevice,
                                                                          "cuBLAS's workspace"));
  PAGODA_TRY(cuda::cublas_status(cublasSetWorkspace(cublas_.handle, cublas_workspace_.data(), cublas_workspace_.size()),
                                 "cuda: cublasSetWorkspace"));
  PAGODA_ASSIGN_OR_RETURN(workspace_memory_, cuda::DeviceMemory::allocate(options_.workspace_bytes,
                                                                          cuda::MemoryKind::kDevice, "the ops' workspace"));
  workspace_ = cuda::Workspace(workspace_memory_.data(), workspace_memory_.size());
  PAGODA_ASSIGN_OR_RETURN(staging_, cuda::StepStaging::create(options_.staging_bytes, stream_.stream));
  ctx_.stream = stream_.stream;
  ctx_.cublas = cublas_.handle;
  ctx_.workspace = &workspace_;
  ctx_.batch_invariant = options_.batch_invariant;
  const char* matvec = std::getenv("PAGODA_CUDA_MATVEC");
  ctx_.rowwise_vec_kernel = matvec != nullptr && std::string(matvec) == "rowwise";
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
    return internal_error("cuda:" + std::to_string(device_) + " failed earlier and cannot run anything more (" +
                          fault_ + "); the process must be restarted to use the GPU again");
  }
  if (!select_device()) {
    return internal_error("cuda: cannot make device " + std::to_string(device_) + " current (cudaSetDevice)");
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
  if (cuda::is_sticky(error) || (again != cudaSuccess && again != cudaErrorNotReady)) {
    fault_ = cuda::cuda_message(error, std::string("at ") + where);
  }
}

Expected<TensorView> CudaBackend::upload_weight(const TensorView& host) {
  PAGODA_TRY(usable());
  if (host.data == nullptr || host.n_elements() == 0) return host;
  if (!host.is_contiguous()) {
    return unsupported("cuda: upload_weight needs a contiguous tensor (rows without gaps)");
  }
  const size_t bytes = host.nb[3] * static_cast<size_t>(host.ne[3]);
  PAGODA_ASSIGN_OR_RETURN(cuda::DeviceMemory memory,
                          cuda::DeviceMemory::allocate(bytes, cuda::MemoryKind::kDevice, "a weight"));
  // From pageable (mapped) memory the copy has read the source when the call returns.
  const cudaError_t error = cudaMemcpyAsync(memory.data(), host.data, bytes, cudaMemcpyHostToDevice, stream_.stream);
  if (error != cudaSuccess) {
    detect_fault(error, "upload_weight");
    return cuda_status(error, "cuda: upload_weight (cudaMemcpyAsync of " + std::to_string(bytes) + " bytes)");
  }
  TensorView device = host;
  device.data = memory.data();
  weights_.push_back(std::move(memory));
  return device;
}

std::optional<Backend::CacheMemory> CudaBackend::cache_memory() const {
  size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t error = select_device() ? cudaMemGetInfo(&free_bytes, &total_bytes) : cudaErrorInvalidDevice;
  if (error != cudaSuccess) {
    cudaGetLastError();
    return CacheMemory{0, cuda::cuda_message(error, "cudaMemGetInfo")};
  }
  // What the utilization bound leaves after everything already on the device (our
  // weights and scratch, the CUDA context, other processes).
  const auto bound = static_cast<uint64_t>(std::floor(options_.memory_utilization * static_cast<double>(total_bytes)));
  const uint64_t in_use = total_bytes - free_bytes;
  const uint64_t bytes = bound > in_use ? bound - in_use : 0;
  char percent[32];
  std::snprintf(percent, sizeof percent, "%g%%", options_.memory_utilization * 100.0);
  return CacheMemory{bytes, std::string(percent) + " of " + cuda::format_bytes(total_bytes) + " less " +
                                cuda::format_bytes(in_use) + " in use (" + cuda::format_bytes(cuda::live_device_bytes()) +
                                " of it Pagoda's weights, buffers and scratch)"};
}

void CudaBackend::copy_kv_blocks(KvStorage& kv, std::span<const KvBlockCopy> copies) {
  if (!ready()) return;
  auto* storage = dynamic_cast<cuda::CudaKvStorage*>(&kv);
  if (storage == nullptr) return note(invalid_argument("cuda: copy_kv_blocks needs a KV cache of this backend"));
  const KvCacheShape& shape = storage->shape();
  for (const KvBlockCopy& copy : copies) {
    if (copy.src < 0 || copy.src >= shape.n_blocks || copy.dst < 0 || copy.dst >= shape.n_blocks) {
      return note(invalid_argument("kv block copy " + std::to_string(copy.src) + " -> " + std::to_string(copy.dst) +
                                   " is outside the " + std::to_string(shape.n_blocks) + " blocks of the cache"));
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
        if (error != cudaSuccess) return note(cuda_status(error, "cuda: copy_kv_blocks (cudaMemcpyAsync)"));
      }
    }
  }
}

void CudaBackend::synchronize() {
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

void CudaBackend::rope(const TensorView& x, std::span<const int32_t> positions, const RopeParams& params) {
  if (!ready()) return;
  // The kernels read one position per token: the count is checked here, on the host.
  const int64_t n_tokens = x.ne[2] * x.ne[3];
  if (static_cast<int64_t>(positions.size()) != n_tokens) {
    return note(invalid_argument("rope: needs one position per token (" + std::to_string(positions.size()) + " for " +
                                 std::to_string(n_tokens) + " tokens)"));
  }
  Expected<const int32_t*> device_positions = staging_.stage(positions);
  if (!device_positions.ok()) return note(device_positions.status());
  run_op([&] { return cuda::rope(ctx_, x, *device_positions, params); }, [] { return std::string("rope"); });
}

void CudaBackend::attention(const TensorView& q, const TensorView& k, const TensorView& v, KvStorage& kv,
                            int32_t layer, const AttentionBatch& batch, float scale, const TensorView& out) {
  if (!ready()) return;
  auto* storage = dynamic_cast<cuda::CudaKvStorage*>(&kv);
  if (storage == nullptr) return note(invalid_argument("cuda: attention needs a KV cache of this backend"));
  const KvCacheShape& shape = storage->shape();
  if (layer < 0 || layer >= shape.n_layers) {
    return note(invalid_argument("attention: layer " + std::to_string(layer) + " outside the cache's " +
                                 std::to_string(shape.n_layers)));
  }
  if (q.ne[3] != 1 || q.ne[0] != shape.head_dim) {
    return note(invalid_argument("attention: q must be a head view [n][n_heads][" + std::to_string(shape.head_dim) +
                                 "], the cache's head size"));
  }
  Expected<cuda::DeviceAttentionBatch> device_batch = staging_.stage_attention(batch, shape, q.ne[2]);
  if (!device_batch.ok()) return note(device_batch.status());
  const cuda::KvLayer views{storage->keys(layer), storage->values(layer)};
  run_op([&] { return cuda::attention(ctx_, q, k, v, views, *device_batch, scale, out); },
         [] { return std::string("attention"); });
}

std::optional<Backend::MemoryBandwidth> CudaBackend::measure_memory_bandwidth() {
  if (!ready()) return std::nullopt;
  const std::optional<double> bytes_per_second = cuda::measure_copy_bandwidth(stream_.stream);
  if (!bytes_per_second) return std::nullopt;
  return MemoryBandwidth{*bytes_per_second, "1 GiB device copy, read + write"};
}

}  // namespace

int cuda_device_count() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  // No driver or no device: not an error of whatever the thread launches next.
  cudaGetLastError();
  return error == cudaSuccess ? count : 0;
}

Expected<std::unique_ptr<Backend>> make_cuda_backend(const CudaBackendOptions& options) {
  return CudaBackend::create(options);
}

}  // namespace pagoda::backend
