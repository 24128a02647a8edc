#pragma once
// The CPU backend: host memory, every Backend op threaded over a fixed pool, SIMD kernels
// chosen at run time for the CPU it runs on.

#include <memory>

#include "backend/backend.h"
#include "quant/dot.h"

namespace pagoda::backend {

struct CpuBackendOptions {
  int n_threads = 0;  // threads for the ops, the calling thread included; 0: one per physical core
  // Highest instruction set the kernels may use; capped by what the CPU runs. Tests and
  // benchmarks lower it to exercise the scalar paths.
  quant::Isa max_isa = quant::Isa::kAvx512Vnni;
  // Multiply each weight type with the f32 rounding of the reference build's kernel for it,
  // so that models reproduce its log-probabilities (see backend/cpu/matmul.h). Off: the
  // fastest kernel for every type (same integer math, f32 sums in another order).
  bool mirror_reference_numerics = true;
};

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options = {});

}  // namespace pagoda::backend
