#pragma once
// The CUDA backend's class, for its two source files: cuda_backend.cpp (the device, memory,
// copies, synchronisation and errors) and cuda_backend_ops.cpp (the ops). Others include
// cuda_backend.h.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_options.h"
#include "backend/cuda/context.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/kv_storage_cuda.h"
#include "backend/cuda/op_profile.h"
#include "backend/cuda/step_graphs.h"
#include "backend/cuda/step_staging.h"
#include "backend/cuda/view_copy.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace pagoda::backend::cuda {

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
    return "cuda:" + std::to_string(device_) + " (" + device_name_ + ", sm_" +
           std::to_string(ctx_.cc_major) + std::to_string(ctx_.cc_minor) + ", " +
           format_bytes(total_memory_) + ")";
  }

  // --- memory -----------------------------------------------------------------------
  Expected<std::unique_ptr<Buffer>> allocate(size_t bytes) override {
    PAGODA_TRY(usable());
    PAGODA_ASSIGN_OR_RETURN(DeviceMemory memory,
                            DeviceMemory::allocate(bytes, MemoryKind::kDevice, "a buffer"));
    return std::unique_ptr<Buffer>(new CudaBuffer(std::move(memory)));
  }
  Expected<std::unique_ptr<KvStorage>> allocate_kv(const KvCacheShape& shape) override {
    flush();
    PAGODA_TRY(usable());
    return CudaKvStorage::create(shape, stream_.stream);
  }
  Expected<std::unique_ptr<Buffer>> allocate_host(size_t bytes) override {
    PAGODA_TRY(usable());
    PAGODA_ASSIGN_OR_RETURN(DeviceMemory memory, DeviceMemory::allocate(bytes, MemoryKind::kPinnedHost, "host buffers"));
    return std::unique_ptr<Buffer>(new CudaBuffer(std::move(memory)));
  }
  Expected<TensorView> upload_weight(const TensorView& host) override;
  std::optional<CacheMemory> cache_memory() const override;

  // --- copies -------------------------------------------------------------------------
  void copy_to_host(const TensorView& src, void* dst) override {
    flush();
    if (ready()) note(copy_view_rows(src, dst, cudaMemcpyDeviceToHost, stream_.stream));
  }
  void copy_from_host(const void* src, const TensorView& dst) override {
    flush();
    if (ready())
      note(copy_view_rows(dst, const_cast<void*>(src), cudaMemcpyHostToDevice, stream_.stream));
  }
  void copy_kv_blocks(KvStorage& kv, std::span<const KvBlockCopy> copies) override;
  void synchronize() override;
  std::optional<MemoryBandwidth> measure_memory_bandwidth() override;
  std::optional<double> measure_gemm_seconds(std::span<const GemmShape> shapes, int64_t n_tokens) override;
  std::vector<OpTime> op_times() const override { return profile_.totals(); }
  void reset_op_times() override { profile_.reset(); }
  Status take_error() override {
    flush();  // the recorded launches check their views as they are enqueued
    return std::exchange(error_, Status{});
  }
  Status health() const override { return usable(); }
  // A step's samplers on the host pool: drawing from 64 requests' softmax over a large
  // vocabulary one after another takes longer than the GPU's step.
  void run_host_tasks(int64_t n, const std::function<void(int64_t)>& task) override {
    if (n <= 1 || host_pool_ == nullptr || host_pool_->size() <= 1) {
      for (int64_t i = 0; i < n; ++i) task(i);
      return;
    }
    host_pool_->parallel_for(n, [&](int64_t i, int) { task(i); });
  }
  const StepGraphs::Counts& graph_counts() const { return graphs_.counts(); }
  std::string step_summary() const override;

  // --- ops (cuda_backend_ops.cpp) ------------------------------------------------------
  // Each op checks what it can on the host, stages its host inputs, then hands its launch
  // (capturing its arguments by value) and their key to run_op.
  void get_rows(const TensorView& table, std::span<const int32_t> ids,
                const TensorView& out) override;
  void matmul(const TensorView& w, const TensorView& x, const TensorView& y) override;
  void matmuls(const TensorView& x, std::span<const MatmulTarget> targets) override;
  void matmuls_swiglu(const TensorView& x, const TensorView& w_gate, const TensorView& w_up,
                      const TensorView& gate, const TensorView& up, const TensorView& out) override;
  void add_bias(const TensorView& y, const TensorView& bias) override;
  void add(const TensorView& a, const TensorView& b, const TensorView& out) override;
  void rms_norm(const TensorView& x, const TensorView& weight, float eps,
                const TensorView& y) override;
  void add_rms_norm(const TensorView& x, const TensorView& delta, const TensorView& weight,
                    float eps, const TensorView& y) override;
  void layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                  const TensorView& y) override;
  void rope(const TensorView& x, std::span<const int32_t> positions,
            const RopeParams& params) override;
  void rope_pair(const TensorView& a, const TensorView& b, std::span<const int32_t> positions,
                 const RopeParams& params) override;
  void silu_mul(const TensorView& gate, const TensorView& up, const TensorView& out) override;
  void gelu(const TensorView& x) override;
  void argmax_rows(const TensorView& x, const TensorView& ids) override;
  void sample_rows(const TensorView& x, std::span<const RowSampling> rows,
                   std::span<const LogitAdjustment> adjustments, const TensorView& ids,
                   const TensorView& logprobs) override;
  void attention(const TensorView& q, const TensorView& k, const TensorView& v, KvStorage& kv,
                 int32_t layer, const AttentionBatch& batch, float scale,
                 const TensorView& out) override;

 private:
  explicit CudaBackend(const CudaBackendOptions& options)
      : options_(options), device_(options.device) {}

  Status open_device();
  Status create_fixed_buffers();

  // Makes device_ the calling thread's current device (the engine's step loop runs on a
  // thread of its own); false when CUDA refuses (its error cleared).
  bool select_device() const;
  // ok when the device can take work: selected, and no fault has broken its context.
  Status usable() const;
  // "matmul q4_K 2048->2048+512+512 n=1" (the type of the first weight), or
  // "matmul q4_K 2048->8192 n=1" for one.
  static std::string matmuls_name(const TensorView& x, std::span<const MatmulTarget> targets);
  // rope's host side: the positions staged after their count is checked (null: noted).
  const int32_t* stage_positions(int64_t n_tokens, std::span<const int32_t> positions);
  static LaunchKey rope_key(uint64_t op, const int32_t* positions, const RopeParams& params);
  // The ops, as the first word of their launch keys.
  enum OpCode : uint64_t {
    kGetRows = 1,
    kMatmul,
    kMatmuls,
    kMatmulsSwiGlu,
    kAddBias,
    kAdd,
    kRmsNorm,
    kAddRmsNorm,
    kLayerNorm,
    kRope,
    kSiluMul,
    kGelu,
    kAttention,
    kRopePair,
    kArgmaxRows,
    kSampleRows
  };
  // Records an op's launch (which returns its Status) for the step's graph, or, when the
  // backend launches op by op, enqueues it now between the profile's events; if the
  // device can take work. name() names it in the profile.
  template <typename Launch, typename Name>
  void run_op(const LaunchKey& key, Launch&& launch, Name&& name);
  // Enqueues the recorded launches, after the copy of their staged inputs: before
  // anything else goes on the stream or reads what they write.
  void flush();
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
  DeviceMemory cublas_workspace_;
  CublasOwner cublas_;
  DeviceMemory workspace_memory_;
  Workspace workspace_;
  StepStaging staging_;
  OpProfile profile_;  // per-op device time, when options_.profile_ops
  StepGraphs graphs_;  // the step's launches, when graphs_enabled_
  bool graphs_enabled_ = false;
  std::vector<DeviceMemory> weights_;  // one allocation per uploaded weight
  std::unique_ptr<ThreadPool> host_pool_;  // run_host_tasks' threads
  Context ctx_;
  Status error_;       // first error since the last take_error()
  std::string fault_;  // the sticky fault that broke the context; empty while usable
};

}  // namespace pagoda::backend::cuda
