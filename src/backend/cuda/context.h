#pragma once
// What every CUDA op is given: the stream it enqueues on, the cuBLAS handle bound to that
// stream, device scratch for its temporaries, and the device's properties.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace pagoda::backend::cuda {

// Device scratch handed out by bumping a pointer. Every op runs on the one stream, after
// the op before it, so an op may reuse the whole workspace: ScratchScope gives it back
// when the op has been enqueued.
class Workspace {
 public:
  Workspace() = default;
  Workspace(void* base, size_t bytes) : base_(static_cast<char*>(base)), size_(bytes) {}

  // `bytes` (rounded up to 256) of scratch, or nullptr when less than that is left.
  void* take(size_t bytes) {
    const size_t rounded = (bytes + 255) & ~size_t{255};
    if (rounded > size_ - used_) return nullptr;
    void* p = base_ + used_;
    used_ += rounded;
    return p;
  }
  size_t remaining() const { return size_ - used_; }
  size_t capacity() const { return size_; }
  size_t used() const { return used_; }
  void release_to(size_t mark) { used_ = mark; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
};

// Gives back everything taken from the workspace during its lifetime.
class ScratchScope {
 public:
  explicit ScratchScope(Workspace& w) : w_(w), mark_(w.used()) {}
  ~ScratchScope() { w_.release_to(mark_); }
  ScratchScope(const ScratchScope&) = delete;
  ScratchScope& operator=(const ScratchScope&) = delete;

 private:
  Workspace& w_;
  size_t mark_;
};

// The few-token matmul kernels (matmul_vec.cu and the two before it).
enum class VecKernel { kPieces, kStaged, kRowwise };

struct Context {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;  // bound to `stream`, its workspace set (no allocations)
  Workspace* workspace = nullptr;
  int sm_count = 0;                 // streaming multiprocessors
  int cc_major = 0, cc_minor = 0;   // compute capability
  size_t shared_memory_optin = 0;   // bytes of shared memory a block may opt in to
  // CudaBackendOptions::batch_invariant: every matmul through the few-token kernel.
  bool batch_invariant = false;
  // PAGODA_CUDA_MATVEC=staged or rowwise: an earlier few-token kernel
  // (matmul_vec_staged.cu, matmul_vec_rowwise.cu) instead of the piece kernel, to
  // measure them side by side.
  VecKernel vec_kernel = VecKernel::kPieces;
  // sm_90 and later: the few-token matmul is launched to start before the kernel before
  // it ends (launch_order.cuh); PAGODA_CUDA_PDL=0 turns that off.
  bool programmatic_launch = false;
  // Attention blocks take several query rows of a prompt (attention.cu);
  // PAGODA_CUDA_ATTENTION_GROUPS=0 gives every row a block of its own, to compare.
  bool attention_row_groups = true;
  // Attention on tensor cores where the cache and head size allow it (attention_mma.cu);
  // PAGODA_CUDA_ATTENTION=scalar keeps every model on the scalar kernel, to compare.
  bool attention_tensor_cores = true;
  // Few-token products of quantized weights in integers against 8-bit activations, as
  // the CPU computes them (matmul_vec_int8.cu); PAGODA_CUDA_INTEGER_DOTS=0 keeps them on
  // the piece kernel's f32 decoders, to compare.
  bool quantized_in_integers = true;
};

}  // namespace pagoda::backend::cuda
