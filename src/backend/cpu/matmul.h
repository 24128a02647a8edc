#pragma once
// y = x W^T on the CPU, for every weight type the quant layer has a dot kernel for.
//
// Each activation row is first quantized once to the weight's activation format (Q8_0,
// Q8_1, Q8_K; f16 / bf16 / f32 for float weights) into scratch that is sized for the
// largest batch seen and then reused. Then one of two schedules:
//  - rows: output rows are split over the threads; each thread streams its weight rows
//    once, dotting each with every token through the quant layer's dot kernels;
//  - tiled: tiles of weight rows x tokens, each computed by a register-blocked
//    micro-kernel (matmul_tiles.h) so that weights are reused from cache across tokens.
//
// Which one kAuto takes: the models must reproduce the reference build's
// log-probabilities, and tiny f32 rounding differences flip 8-bit activation roundings
// downstream, so by default every type takes the schedule whose f32 arithmetic matches
// the reference's kernel for it: tiled at any batch size for Q8_0, Q5_0, Q4_1, Q5_1 (pair
// kernels) and for Q4_0, IQ4_NL, Q4_K with n_out % 8 == 0 (strip kernels, as the
// reference repacks them), rows otherwise. With mirror_reference off, every type with a tiled
// kernel takes it from kTiledMinTokens tokens on: faster, same integer math, f32 sums
// in another order.

#include <vector>

#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/matmul_tiles.h"
#include "backend/tensor.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

enum class MatmulSchedule { kAuto, kRows, kTiled };

class Matmul {
 public:
  explicit Matmul(quant::Isa isa, bool mirror_reference = true)
      : isa_(isa), mirror_reference_(mirror_reference) {}

  // w: [n_out][n_in] of a weight type; x: [n][n_in] f32; y: [n][n_out] f32 (rows of x and y
  // may be strided). kTiled fails for a type with no tiled kernel on this ISA.
  Status run(ThreadPool& pool, const TensorView& w, const TensorView& x, const TensorView& y,
             MatmulSchedule schedule = MatmulSchedule::kAuto);

  // Fewest tokens for which kAuto takes the tiled schedule (when a tiled kernel exists).
  static constexpr int64_t kTiledMinTokens = 4;

 private:
  struct Plan;
  Status quantize_activations(ThreadPool& pool, const TensorView& x, Plan& plan);
  Status sum_activation_blocks(ThreadPool& pool, Plan& plan);
  void run_rows(ThreadPool& pool, const Plan& plan);
  void run_tiled(ThreadPool& pool, const Plan& plan);

  bool use_tiled(const TileKernel* tile, int64_t n_out, int64_t n_tokens) const;

  quant::Isa isa_;
  bool mirror_reference_;
  Scratch activations_;  // quantized rows of x: [n][row_bytes(activation, n_in)]
  Scratch block_sums_;   // [n][n_in / 32] int32, for tile kernels that want them
  std::vector<Scratch> tile_scratch_;  // per thread: one repacked strip of 8 weight rows
};

}  // namespace pagoda::backend::cpu
