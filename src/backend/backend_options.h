#pragma once
// How a backend is made: which device, and each backend's own settings. Plain data,
// filled from flags, environment and config files (cli/backend_args.h, server config)
// and read by backend::create (backend/registry/registry.h), the one place a backend is
// chosen. The values are parsed here, once, for every front end.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/cpu_features.h"

namespace pagoda::backend {

enum class DeviceKind { kAuto, kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kAuto;
  int index = 0;  // the CUDA device ordinal of "cuda:N"

  std::string to_string() const;  // "auto", "cpu", "cuda:0"
};

// "auto" (the GPU when this build has the CUDA backend and the machine a GPU, else the
// CPU), "cpu", "cuda" (device 0) or "cuda:N"; case-insensitive.
Expected<DeviceSpec> parse_device(std::string_view text);

// How the CPU kernels round in f32 (the integer math of the quantized dot products is
// the same, and exact, in both).
enum class CpuNumerics {
  // The fastest kernel of each weight type, batch-invariant: one order of f32 additions
  // per type for every batch size and thread count, so a token's outputs are bit for bit
  // the same whichever tokens share its batch (what continuous batching needs).
  kFast,
  // Each op rounds as the reference build's CPU kernel for it does (see
  // backend/cpu/matmul/matmul.h), so that models reproduce its log-probabilities; slower, and a
  // token's outputs may depend on the size of its batch, as the reference's do.
  kReference,
};

// "fast" or "reference"; case-insensitive.
Expected<CpuNumerics> parse_cpu_numerics(std::string_view text);

struct CpuBackendOptions {
  int n_threads = 0;  // threads for the ops, the calling thread included; 0: one per physical core
  // Highest instruction set the kernels may use; capped by what the CPU runs. Tests and
  // benchmarks lower it to exercise the scalar paths.
  Isa max_isa = Isa::kAmx;
  CpuNumerics numerics = CpuNumerics::kFast;
  // Bytes the matmuls may spend keeping model weights repacked for batched steps
  // (backend/cpu/matmul/matmul_repacked.h); kAutoRepackedBytes: an eighth of physical memory.
  static constexpr size_t kAutoRepackedBytes = ~size_t{0};
  size_t repacked_weight_bytes = kAutoRepackedBytes;
  // Read the weights where the GGUF file is mapped instead of copying them onto huge
  // pages (backend/cpu/weight_copies.h): less memory, slower decoding.
  bool mmap_weights = false;
  // Time every op with the steady clock (Backend::op_times); costs two clock reads per op.
  bool profile_ops = false;
};

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
  // Every matmul through the few-token kernel, a group of tokens at a time, so that a
  // token's outputs are bit for bit the same whatever else is in its batch (what the
  // CPU's fast numerics give); prompts run slower. Off: many tokens go to cuBLAS.
  bool batch_invariant = false;
  // Time every op with CUDA events (Backend::op_profile); costs a little per op.
  bool profile_ops = false;
  // Run a step whose launches repeat an earlier step's as a CUDA graph
  // (cuda/step_graphs.h); off (or PAGODA_CUDA_GRAPHS=0, or profile_ops): every op's
  // kernels are launched as it is called.
  bool graphs = true;
  // Host threads for a step's host work (each request's sampler, Backend::run_host_tasks),
  // the calling thread included; 0: the machine's physical cores, at most 8.
  int host_threads = 0;
};

// A GPU memory share: in (0, 1].
Status check_memory_utilization(double share);

struct BackendOptions {
  DeviceSpec device;
  CpuBackendOptions cpu;
  CudaBackendOptions cuda;  // its `device` is taken from `device` by backend::create
};

}  // namespace pagoda::backend
