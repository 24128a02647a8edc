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
//    The strip kernels, which first repack 8 rows at a time into a SIMD-friendly layout,
//    get panels of rows (a few per thread, each small enough to stay in L2 repacked)
//    against every token, so that each row is repacked once per matmul; a single token
//    (decoding) reads the rows as stored instead (or a kept copy: TileKernel).
//
// Which one kAuto takes depends on the numerics (backend/cpu/cpu_backend.h):
//  - kFast: every type with a tiled kernel takes it at every batch size, a single token
//    included (the kernels' single-token path sums in the order of their many-token one),
//    the others the rows schedule. Either way each result is one dot product of a weight
//    row with an activation row, computed whole by one thread in one fixed order: it does
//    not depend on the batch, on where the token and row fall in tiles, nor on the thread
//    count (tests/backend/matmul_invariance_test.cpp).
//  - kReference: the models must reproduce the reference build's log-probabilities, and
//    tiny f32 rounding differences flip 8-bit activation roundings downstream, so every
//    type takes the schedule whose f32 arithmetic matches the reference's kernel for it:
//    tiled at any batch size for Q8_0, Q5_0, Q4_1, Q5_1 (pair kernels) and for Q4_0,
//    IQ4_NL, Q4_K with n_out % 8 == 0 (strip kernels, as the reference repacks them),
//    rows otherwise.
//
// Where a second kernel gives a weight's tiles the same bits (find_timed_alternative:
// on a CPU with AMX, the k-quants' VNNI strips beside their tile-unit kernels), tiles of
// kMinTimedTokens to kMaxTimedTokens - 1 tokens take whichever the matmul measures
// faster for that weight and class of token counts (timed_choice.h); prompts keep the
// first kernel.

#include <array>
#include <map>
#include <span>
#include <vector>

#include "backend/cpu/aligned_memory.h"
#include "backend/cpu/attention/kv_lookahead.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/matmul/matmul_repacked.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "backend/cpu/matmul/timed_choice.h"
#include "backend/tensor.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "quant/dot.h"

namespace pagoda::backend::cpu {

enum class MatmulSchedule { kAuto, kRows, kTiled };

class Matmul {
 public:
  // repacked_bytes: the budget for weights kept repacked (matmul_repacked.h); 0 keeps none.
  explicit Matmul(Isa isa, CpuNumerics numerics = CpuNumerics::kFast, size_t repacked_bytes = 0)
      : isa_(isa), numerics_(numerics), repacked_(repacked_bytes) {}

  // [data, data + bytes) holds model weights, unchanged while this Matmul lives: batched
  // matmuls may keep them repacked.
  void add_weight(const void* data, size_t bytes) { repacked_.add_weight(data, bytes); }
  // The kernels of few tokens ask for the lines of this plan (kv_lookahead.h) as they
  // multiply kept copies; nullptr (the default): none.
  void set_lookahead(KvLookahead* lookahead) { lookahead_ = lookahead; }
  size_t repacked_bytes() const { return repacked_.bytes_used(); }

  // w: [n_out][n_in] of a weight type; x: [n][n_in] f32; y: [n][n_out] f32 (rows of x and y
  // may be strided). kTiled fails for a type with no tiled kernel on this ISA.
  Status run(ThreadPool& pool, const TensorView& w, const TensorView& x, const TensorView& y,
             MatmulSchedule schedule = MatmulSchedule::kAuto);
  // Each target's y = x W^T, as run gives it. When every weight takes a tiled kernel with
  // the same activation format, x is quantized once and the products' tiles run as one
  // job over the threads (fewer, fuller jobs for the small matrices of q, k and v);
  // otherwise one run per target.
  Status run_many(ThreadPool& pool, const TensorView& x, std::span<const MatmulTarget> targets);

 private:
  struct Plan;
  static constexpr size_t kMaxShared = 4;  // targets run_many runs as one job
  // Token counts of kMinTimedTokens to kMaxTimedTokens - 1 by power of two: 2-3, 4-7,
  // ..., 32-63 tokens.
  static constexpr size_t kTimedClasses = 5;
  // A call's timed choice (between the plans' kernels and their alternatives, or for a
  // single token between the kept copy and the rows as stored): the way it took, and the
  // TimedChoice to tell how long it took (nullptr: no choice).
  struct KernelChoice {
    TimedChoice* choice = nullptr;
    bool alternative = false;
  };
  // Checks the shapes and picks the kernels and the schedule; quantizes nothing.
  Status prepare(const TensorView& w, const TensorView& x, const TensorView& y, MatmulSchedule schedule,
                 Plan& plan) const;
  // sums / scales: also keep each block's quant sum / f32 scale (TileJob::a_sums, a_scales).
  Status quantize_activations(ThreadPool& pool, const TensorView& x, bool sums, bool scales, Plan& plan);
  Status reserve_block_data(bool sums, bool scales, Plan& plan);
  // For plans whose tile kernel lays out its activations itself (TileKernel::
  // prepare_activations): once, into activation_tiles_ (Plan::a_tiles).
  Status prepare_activation_tiles(ThreadPool& pool, std::span<Plan> plans);
  // Where the plans' kernels have timed alternatives and their token count is in the
  // timed range: asks the choice of their class for the first plan's weight, and sets
  // the alternatives in the plans where it says so. For a single token whose kernel may
  // read the kept copy instead of the rows as stored: asks the first weight's single-token
  // choice, and marks the plans that read it. Before the activations are quantized and
  // padded for the kernels.
  KernelChoice choose_kernels(std::span<Plan> plans);
  // Lays out the activations where the kernels want it, then executes the plans, and
  // tells `choice` how long that took per weight byte.
  Status run_chosen(ThreadPool& pool, std::span<Plan> plans, KernelChoice choice);
  // Runs prepared plans whose activations are quantized: one untiled plan by rows, else
  // every plan's tiles in one job.
  Status execute(ThreadPool& pool, std::span<Plan> plans);
  // Under kFast, 2 or 3 tokens on repacking kernels are planned as kMinStripTokens (the
  // last one repeated): they take the strips, one pass over the rows for all of them,
  // where the single-token path would pay a pass per token; the tiles then run the real
  // tokens only (the strip kernels take 2 and 1 at a time too). Batch invariance makes
  // each token's result the same either way. True when `plans` were so padded (their y
  // then points into padded_y_, which finish_padding() copies out).
  bool pad_to_strip_tokens(std::span<Plan> plans);
  void finish_padding(std::span<const Plan> plans);
  void run_rows(ThreadPool& pool, const Plan& plan);
  static void plan_tiles(int n_threads, Plan& plan);
  void run_tiled(ThreadPool& pool, std::span<const Plan> plans);

  bool use_tiled(const TileKernel* tile, int64_t n_out) const;

  Isa isa_;
  CpuNumerics numerics_;
  Scratch activations_;  // quantized rows of x: [n][row_bytes(activation, n_in)]
  Scratch block_sums_;    // [n][n_in / 32] int32, for tile kernels that want them
  Scratch block_scales_;  // [n][n_in / 32 or 2 * n_in / 32] f32, for tile kernels that want them
  Scratch activation_tiles_;  // x as a tile kernel lays it out (TileKernel::prepare_activations)
  std::vector<Scratch> tile_scratch_;  // per thread: the repacked rows of a panel
  Scratch padded_y_;  // [plans][kMinStripTokens][n_out] f32: padded products' outputs
  RepackedWeights repacked_;
  // Per weight whose kept copy may serve single tokens (by its first row; for a call of
  // several, the first one's): which way is faster here. Per weight, not per type: a
  // small matrix costs more per byte than a large one either way, and the calls that try
  // the other way fall on some matrices more than others.
  std::map<const std::byte*, TimedChoice> single_token_choices_;
  // Per weight with a timed alternative kernel (by its first row; for a call of several,
  // the first one's) and class of token counts: which kernel is faster here.
  std::map<const std::byte*, std::array<TimedChoice, kTimedClasses>> kernel_choices_;
  KvLookahead* lookahead_ = nullptr;
};

}  // namespace pagoda::backend::cpu
