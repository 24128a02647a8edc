#pragma once
// The CPU backend: host memory, every Backend op threaded over a fixed pool, SIMD kernels
// chosen at run time for the CPU it runs on.

#include <memory>

#include "backend/backend.h"
#include "quant/dot.h"

namespace pagoda::backend {

// How the kernels round in f32 (the integer math of the quantized dot products is the
// same, and exact, in both).
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

struct CpuBackendOptions {
  int n_threads = 0;  // threads for the ops, the calling thread included; 0: one per physical core
  // Highest instruction set the kernels may use; capped by what the CPU runs. Tests and
  // benchmarks lower it to exercise the scalar paths.
  Isa max_isa = Isa::kAvx512Vnni;
  CpuNumerics numerics = CpuNumerics::kFast;
  // Bytes the matmuls may spend keeping model weights repacked for batched steps
  // (backend/cpu/matmul/matmul_repacked.h); kAutoRepackedBytes: an eighth of physical memory.
  static constexpr size_t kAutoRepackedBytes = ~size_t{0};
  size_t repacked_weight_bytes = kAutoRepackedBytes;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options = {});

}  // namespace pagoda::backend
