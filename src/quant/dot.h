#pragma once
// Dot products of one weight row with an activation vector, the way fast engines do
// them: the activations are first quantized (once per vector) to the 8-bit format the
// weight type pairs with; then integer dot products per block, one scale multiply per
// block. Each weight type has a scalar reference kernel and, where it pays, AVX2,
// AVX-512 and AVX-512 VNNI kernels, chosen at run time from what the CPU really runs.

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"

namespace pagoda::quant {

// Instruction sets this CPU (and OS) can run, scalar first, best last.
const std::vector<Isa>& available_isas();
Isa best_isa();
bool isa_available(Isa isa);

// Converts f32 activations (n values) into the activation format.
using QuantizeActivationsFn = void (*)(const float* x, void* y, int64_t n);
// `quantize` for Q8_0 / Q8_1 activations that also hands back what a matmul derives from
// each 32-value block, in the same pass (block b holds x[32b .. 32b + 31]; n a multiple
// of 32). It writes to y exactly the bytes `quantize` writes and, where the pointer is
// not null:
//   scales: the block's stored halves as f32 (exactly: every half is a float).
//           Q8_0: n / 32 floats, d of block b at [b];
//           Q8_1: 2 * n / 32 floats, d of block b at [2b], its s at [2b + 1].
//   sums:   n / 32 int32, the sum of block b's 32 quants (within +-4064) at [b].
using QuantizeDescribedFn = void (*)(const float* x, void* y, int64_t n, float* scales, int32_t* sums);
// Returns sum_i w[i] * a[i] over n values (n a multiple of the weight's block size).
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

struct DotKernel {
  DType weight;
  DType activation;  // Q8_0, Q8_1, Q8_K; F16 for F16, BF16 for BF16, F32 for F32
  QuantizeActivationsFn quantize;
  VecDotFn dot;
  Isa isa;  // the instruction set `dot` is written for (at most the one asked for)
  // Set where the activation is Q8_0 or Q8_1; written for the ISA asked for, like `quantize`.
  QuantizeDescribedFn quantize_described = nullptr;
};

// The kernel for `weight` on `isa` (falling back to a lower ISA's kernel where that ISA
// has none of its own); nullptr when the type has no dot product, or when this CPU
// cannot run `isa` (so a kernel handed out never faults).
const DotKernel* find_dot_kernel(DType weight, Isa isa);
// The same on the best ISA of this CPU.
const DotKernel* dot_kernel(DType weight);

}  // namespace pagoda::quant
