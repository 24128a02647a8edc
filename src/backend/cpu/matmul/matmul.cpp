#include "backend/cpu/matmul/matmul.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <string>

#include "backend/cpu/matmul/matmul_float.h"
#include "backend/cpu/matmul/matmul_tiles.h"
#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace pagoda::backend::cpu {
namespace {

// Weight bytes (as stored, or repacked) a schedule tries to keep in a core's L2 while it
// reuses them.
constexpr size_t kWeightPanelBytes = 128 * 1024;
// Activation bytes a tile of the tiled schedule keeps in L2 beside them: each strip of 8
// weight rows passes over all of the tile's tokens.
constexpr size_t kTileActivationBytes = 192 * 1024;
constexpr int64_t kMaxTileTokens = 64;
// Panels per thread the repacking kernels' work is cut into, so that threads slowed by
// other work on a shared machine are balanced by the others.
constexpr int64_t kPanelsPerThread = 4;
// The same for tiles of fewer than kMinStripTokens tokens: one panel each, one stream of
// weight bytes per thread from the start of its rows to their end. Cut in four, each
// panel restarted the stream (and its prefetch) and the threads' streams interleaved,
// which slowed a small model read from L3 markedly (a model read from memory, not). A
// thread that has not joined yet still leaves its panel to the caller (ThreadPool hands
// tasks out one by one).
constexpr int64_t kSingleTokenPanelsPerThread = 1;

// Asks for `bytes` bytes at p (__builtin_prefetch's locality: 3 into L1, 2 into L2).
template <int kLocality>
void prefetch_bytes(const std::byte* p, size_t bytes) {
  for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(p + at, 0, kLocality);
}

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

struct Matmul::Plan {
  const quant::DotKernel* kernel = nullptr;
  const TileKernel* tile = nullptr;
  const TileKernel* alternative = nullptr;  // find_timed_alternative's, for a tiled plan
  bool kept_single_token = false;  // a single token reads the kept copy (choose_kernels)
  int64_t n_in = 0, n_out = 0, n_tokens = 0;
  // Tokens of x and y; n_tokens is more when the plan is padded (pad_to_strip_tokens).
  int64_t n_real_tokens = 0;
  float* real_y = nullptr;  // y itself when padded
  size_t real_y_stride = 0;
  const std::byte* w = nullptr;
  size_t w_stride = 0;
  const std::byte* a = nullptr;  // activations in the kernel's format
  size_t a_stride = 0;
  float* y = nullptr;
  size_t y_stride = 0;  // floats between tokens
  // Per token and 32-value activation block, when the tile kernel wants them (see TileJob):
  int32_t* a_sums = nullptr;    // [n_tokens][n_in / 32] sums of the quants
  float* a_scales = nullptr;    // [n_tokens][a_scales_stride] scales as f32
  size_t a_scales_stride = 0;
  // Tiled schedule: tasks of panel_rows weight rows x tile_tokens tokens.
  int64_t panel_rows = 0, tile_tokens = 0;
  int64_t cols_per_pass = 0;  // see TileJob
  size_t scratch_bytes = 0;   // per thread
  // The weight's rows kept repacked (RepackedWeights), or nullptr; the bytes of each
  // tile->strip_rows rows of them.
  const std::byte* strips = nullptr;
  size_t strip_bytes = 0;
  // The activations as the tile kernel's prepare_activations laid them out, or nullptr.
  const std::byte* a_tiles = nullptr;
};

Status Matmul::prepare(const TensorView& w, const TensorView& x, const TensorView& y, MatmulSchedule schedule,
                       Plan& plan) const {
  // The reference's row-by-row dot products are its AVX2 ones on every x86 CPU (it has
  // no AVX-512 variants of most): reference numerics round as they do.
  const Isa dot_isa =
      numerics_ == CpuNumerics::kReference && isa_ > Isa::kAvx2 ? Isa::kAvx2 : isa_;
  plan.kernel = quant::find_dot_kernel(w.type, dot_isa);
  if (plan.kernel == nullptr || w.data == nullptr) {
    return unsupported("matmul: no dot kernel for weights of type " + std::string(dtype_name(w.type)));
  }
  plan.n_in = w.ne[0];
  plan.n_out = w.ne[1];
  plan.n_tokens = x.n_rows();
  plan.n_real_tokens = plan.n_tokens;
  if (w.ne[2] != 1 || w.ne[3] != 1 || !is_f32_rows(x) || !is_f32_rows(y) || x.ne[0] != plan.n_in ||
      y.ne[0] != plan.n_out || y.n_rows() != plan.n_tokens || y.nb[1] % sizeof(float) != 0 ||
      x.ne[2] * x.ne[3] != 1 || y.ne[2] * y.ne[3] != 1) {
    return invalid_argument("matmul: needs w [n_out][n_in], x [n][n_in] f32 and y [n][n_out] f32");
  }
  if (plan.n_in % traits(w.type).block_size != 0 ||
      plan.n_in % traits(plan.kernel->activation).block_size != 0) {
    return invalid_argument("matmul: row length " + std::to_string(plan.n_in) +
                            " is not a multiple of the block size of " + std::string(dtype_name(w.type)));
  }
  plan.w = static_cast<const std::byte*>(w.data);
  plan.w_stride = w.nb[1];
  plan.y = static_cast<float*>(y.data);
  plan.y_stride = y.nb[1] / sizeof(float);

  const TileKernel* tile = find_tile_kernel(w.type, isa_, numerics_);
  if (numerics_ == CpuNumerics::kReference && tile == nullptr) {  // F32 / F16: the reference's gemm, for batches
    tile = find_reference_float_tile(w.type, isa_, plan.n_in, plan.n_out, plan.n_tokens);
  }
  if (numerics_ == CpuNumerics::kFast && tile == nullptr) tile = find_fast_float_tile(w.type, isa_, plan.n_in);
  if (schedule == MatmulSchedule::kTiled && tile == nullptr) {
    return unsupported("matmul: no tiled kernel for " + std::string(dtype_name(w.type)));
  }
  const bool tiled = schedule == MatmulSchedule::kTiled ||
                     (schedule == MatmulSchedule::kAuto && use_tiled(tile, plan.n_out));
  plan.tile = tiled ? tile : nullptr;
  plan.alternative = tiled ? find_timed_alternative(w.type, isa_, numerics_) : nullptr;
  return {};
}

Matmul::KernelChoice Matmul::choose_kernels(std::span<Plan> plans) {
  const int64_t n_tokens = plans.front().n_tokens;
  if (plans.front().tile == nullptr) return {};
  if (n_tokens == 1) {  // the kept copy or the rows as stored, where the kernel may read either
    const bool any = std::any_of(plans.begin(), plans.end(), [](const Plan& plan) {
      return plan.tile->repack != nullptr && plan.tile->kept_for_single_tokens_when_faster;
    });
    if (!any) return {};
    TimedChoice& choice = single_token_choices_[plans.front().w];
    const bool kept = choice.second();
    for (Plan& plan : plans) plan.kept_single_token = kept && plan.tile->kept_for_single_tokens_when_faster;
    return {&choice, kept};
  }
  const bool any = std::any_of(plans.begin(), plans.end(), [](const Plan& plan) { return plan.alternative != nullptr; });
  if (!any || n_tokens < kMinTimedTokens || n_tokens >= kMaxTimedTokens) return {};
  const auto timed_class = static_cast<size_t>(std::bit_width(static_cast<uint64_t>(n_tokens)) - 2);
  TimedChoice& choice = kernel_choices_[plans.front().w][timed_class];
  const bool alternative = choice.second();
  if (alternative) {
    for (Plan& plan : plans) plan.tile = plan.alternative != nullptr ? plan.alternative : plan.tile;
  }
  return {&choice, alternative};
}

Status Matmul::run_chosen(ThreadPool& pool, std::span<Plan> plans, KernelChoice choice) {
  const auto start = std::chrono::steady_clock::now();
  const size_t repacked_before = repacked_.bytes_used();
  PAGODA_TRY(prepare_activation_tiles(pool, plans));
  PAGODA_TRY(execute(pool, plans));
  // A call that made a kept copy paid for making it, then found it in cache: not a fair
  // sample of its way.
  if (choice.choice != nullptr && repacked_.bytes_used() == repacked_before) {
    size_t weight_bytes = 0;
    for (const Plan& plan : plans) weight_bytes += plan.w_stride * static_cast<size_t>(plan.n_out);
    choice.choice->record(choice.alternative,
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), weight_bytes);
  }
  return {};
}

Status Matmul::run(ThreadPool& pool, const TensorView& w, const TensorView& x, const TensorView& y,
                   MatmulSchedule schedule) {
  Plan plan;
  PAGODA_TRY(prepare(w, x, y, schedule, plan));
  if (plan.n_tokens == 0 || plan.n_out == 0) return {};
  const KernelChoice choice = choose_kernels(std::span<Plan>(&plan, 1));
  const bool sums = plan.tile != nullptr && plan.tile->block_sums;
  const bool scales = plan.tile != nullptr && plan.tile->block_scales;
  const bool padded = pad_to_strip_tokens(std::span<Plan>(&plan, 1));
  PAGODA_TRY(quantize_activations(pool, x, sums, scales, plan));
  PAGODA_TRY(run_chosen(pool, std::span<Plan>(&plan, 1), choice));
  if (padded) finish_padding(std::span<const Plan>(&plan, 1));
  return {};
}

Status Matmul::run_many(ThreadPool& pool, const TensorView& x, std::span<const MatmulTarget> targets) {
  std::array<Plan, kMaxShared> plans;
  bool shared = targets.size() <= kMaxShared;
  for (size_t i = 0; shared && i < targets.size(); ++i) {
    PAGODA_TRY(prepare(targets[i].w, x, targets[i].y, MatmulSchedule::kAuto, plans[i]));
    // One quantized x serves tiled products whose weights pair with the same format.
    shared = plans[i].tile != nullptr && plans[i].n_out > 0 &&
             plans[i].kernel->activation == plans[0].kernel->activation;
  }
  if (!shared || targets.empty() || plans[0].n_tokens == 0) {
    for (const MatmulTarget& t : targets) PAGODA_TRY(run(pool, t.w, x, t.y));
    return {};
  }
  const std::span<Plan> used(plans.data(), targets.size());
  const KernelChoice choice = choose_kernels(used);
  bool sums = false, scales = false;  // what any of the kernels wants besides the quants
  for (const Plan& plan : used) {
    sums = sums || plan.tile->block_sums;
    scales = scales || plan.tile->block_scales;
  }
  const bool padded = pad_to_strip_tokens(used);
  PAGODA_TRY(quantize_activations(pool, x, sums, scales, plans[0]));
  for (Plan& plan : used.subspan(1)) {
    plan.a = plans[0].a;
    plan.a_stride = plans[0].a_stride;
    plan.a_sums = plans[0].a_sums;
    plan.a_scales = plans[0].a_scales;
    plan.a_scales_stride = plans[0].a_scales_stride;
  }
  PAGODA_TRY(run_chosen(pool, used, choice));
  if (padded) finish_padding(used);
  return {};
}

bool Matmul::pad_to_strip_tokens(std::span<Plan> plans) {
  if (numerics_ != CpuNumerics::kFast) return false;
  for (const Plan& plan : plans) {
    // (f32 activations are read from x in place: no rows to repeat)
    if (plan.tile == nullptr || !plan.tile->repacks_rows || plan.tile->repack == nullptr ||
        plan.kernel->activation == DType::F32 || plan.n_tokens < 2 || plan.n_tokens >= kMinStripTokens) {
      return false;
    }
  }
  size_t total = 0;
  for (const Plan& plan : plans) total += static_cast<size_t>(plan.n_out * kMinStripTokens);
  float* outputs = reinterpret_cast<float*>(padded_y_.reserve(total * sizeof(float)));
  if (outputs == nullptr) return false;  // the single-token path needs no scratch
  for (Plan& plan : plans) {
    plan.real_y = plan.y;
    plan.real_y_stride = plan.y_stride;
    plan.y = outputs;
    plan.y_stride = static_cast<size_t>(plan.n_out);
    plan.n_tokens = kMinStripTokens;
    outputs += plan.n_out * kMinStripTokens;
  }
  return true;
}

void Matmul::finish_padding(std::span<const Plan> plans) {
  for (const Plan& plan : plans) {
    for (int64_t t = 0; t < plan.n_real_tokens; ++t) {
      std::copy_n(plan.y + static_cast<size_t>(t) * plan.y_stride, plan.n_out,
                  plan.real_y + static_cast<size_t>(t) * plan.real_y_stride);
    }
  }
}

Status Matmul::execute(ThreadPool& pool, std::span<Plan> plans) {
  if (plans.size() == 1 && plans[0].tile == nullptr) {
    run_rows(pool, plans[0]);
    return {};
  }
  size_t scratch_bytes = 0;
  for (Plan& plan : plans) {
    if (plan.tile->repack != nullptr && plan.n_tokens <= plan.tile->kept_for_tokens_up_to &&
        (plan.n_tokens >= kMinStripTokens || plan.n_in <= plan.tile->kept_for_single_tokens_up_to ||
         plan.kept_single_token)) {
      const WeightRows rows{plan.w, plan.kernel->weight, plan.n_out, plan.n_in, plan.w_stride};
      plan.strips = repacked_.find(pool, rows, *plan.tile);
      TileJob strip;
      strip.n_in = plan.n_in;
      strip.n_rows = plan.tile->strip_rows;
      plan.strip_bytes = plan.tile->repack(strip, nullptr);
    }
    plan_tiles(pool.size(), plan);
    scratch_bytes = std::max(scratch_bytes, plan.scratch_bytes);
  }
  tile_scratch_.resize(static_cast<size_t>(pool.size()));
  for (Scratch& s : tile_scratch_) {
    if (s.reserve(scratch_bytes) == nullptr) return resource_exhausted("matmul: cannot allocate tile scratch");
  }
  run_tiled(pool, plans);
  return {};
}

bool Matmul::use_tiled(const TileKernel* tile, int64_t n_out) const {
  if (tile == nullptr) return false;
  if (numerics_ == CpuNumerics::kReference) {
    return tile->mirrors_reference && (!tile->needs_rows_of_8 || n_out % 8 == 0);
  }
  return true;  // batch invariance: the same kernel, so the same sums, for every batch size
}

Status Matmul::quantize_activations(ThreadPool& pool, const TensorView& x, bool sums, bool scales, Plan& plan) {
  const quant::DotKernel& kernel = *plan.kernel;
  if (kernel.activation == DType::F32) {  // f32 weights read the activations as they are
    plan.a = static_cast<const std::byte*>(x.data);
    plan.a_stride = x.nb[1];
    return {};
  }
  plan.a_stride = static_cast<size_t>(row_bytes(kernel.activation, plan.n_in));
  std::byte* dst = activations_.reserve(plan.a_stride * static_cast<size_t>(plan.n_tokens));
  if (dst == nullptr) return resource_exhausted("matmul: cannot allocate activation scratch");
  plan.a = dst;
  PAGODA_TRY(reserve_block_data(sums, scales, plan));
  if ((plan.a_sums != nullptr || plan.a_scales != nullptr) && kernel.quantize_described == nullptr) {
    return internal_error("matmul: a kernel wants block data its activation quantizer does not give");
  }
  const int64_t n_blocks = plan.n_in / quant::kQK;  // the block data in the same pass
  parallel_rows(pool, plan.n_real_tokens, plan.n_in, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      std::byte* row = dst + static_cast<size_t>(t) * plan.a_stride;
      if (plan.a_sums == nullptr && plan.a_scales == nullptr) {
        kernel.quantize(x.row<const float>(t), row, plan.n_in);
        continue;
      }
      float* scales = plan.a_scales == nullptr ? nullptr : plan.a_scales + static_cast<size_t>(t) * plan.a_scales_stride;
      int32_t* sums = plan.a_sums == nullptr ? nullptr : plan.a_sums + t * n_blocks;
      kernel.quantize_described(x.row<const float>(t), row, plan.n_in, scales, sums);
    }
  });
  // Padding tokens repeat the last real one.
  const int64_t last = plan.n_real_tokens - 1;
  for (int64_t t = plan.n_real_tokens; t < plan.n_tokens; ++t) {
    std::copy_n(dst + static_cast<size_t>(last) * plan.a_stride, plan.a_stride, dst + static_cast<size_t>(t) * plan.a_stride);
    if (plan.a_sums != nullptr) std::copy_n(plan.a_sums + last * n_blocks, n_blocks, plan.a_sums + t * n_blocks);
    if (plan.a_scales != nullptr) {
      std::copy_n(plan.a_scales + static_cast<size_t>(last) * plan.a_scales_stride, plan.a_scales_stride,
                  plan.a_scales + static_cast<size_t>(t) * plan.a_scales_stride);
    }
  }
  return {};
}

Status Matmul::prepare_activation_tiles(ThreadPool& pool, std::span<Plan> plans) {
  // Plans share their quantized activations (run_many): one layout serves every plan
  // whose kernel lays them out the same way.
  for (size_t i = 0; i < plans.size(); ++i) {
    Plan& plan = plans[i];
    const TileKernel* tile = plan.tile;
    if (tile == nullptr || tile->prepare_activations == nullptr || plan.n_tokens < kMinStripTokens) continue;
    for (size_t j = 0; j < i && plan.a_tiles == nullptr; ++j) {
      if (plans[j].a_tiles != nullptr && plans[j].tile->prepare_activations == tile->prepare_activations) {
        plan.a_tiles = plans[j].a_tiles;
      }
    }
    if (plan.a_tiles != nullptr) continue;
    std::byte* out = activation_tiles_.reserve(tile->activation_tiles_bytes(plan.n_in, plan.n_tokens));
    if (out == nullptr) return resource_exhausted("matmul: cannot allocate activation tiles");
    TileJob job;
    job.n_in = plan.n_in;
    job.a = plan.a;
    job.a_stride = plan.a_stride;
    job.n_cols = plan.n_tokens;
    const int64_t n_groups = (plan.n_tokens + kActivationTileTokens - 1) / kActivationTileTokens;
    pool.parallel_for(n_groups, [&](int64_t group, int) { tile->prepare_activations(job, group, group + 1, out); });
    plan.a_tiles = out;
  }
  return {};
}

Status Matmul::reserve_block_data(bool sums, bool scales, Plan& plan) {
  scales = scales && (plan.kernel->activation == DType::Q8_0 || plan.kernel->activation == DType::Q8_1);
  const size_t n_blocks = static_cast<size_t>(plan.n_in / quant::kQK), n_tokens = static_cast<size_t>(plan.n_tokens);
  if (sums) {
    plan.a_sums = reinterpret_cast<int32_t*>(block_sums_.reserve(sizeof(int32_t) * n_blocks * n_tokens));
    if (plan.a_sums == nullptr) return resource_exhausted("matmul: cannot allocate activation sums");
  }
  if (scales) {
    plan.a_scales_stride = (plan.kernel->activation == DType::Q8_1 ? 2 : 1) * n_blocks;
    plan.a_scales = reinterpret_cast<float*>(block_scales_.reserve(sizeof(float) * plan.a_scales_stride * n_tokens));
    if (plan.a_scales == nullptr) return resource_exhausted("matmul: cannot allocate activation scales");
  }
  return {};
}

void Matmul::run_rows(ThreadPool& pool, const Plan& plan) {
  // Chunks of rows small enough to balance the threads, and (for several tokens) to stay
  // in L2 while each token passes over them.
  const size_t w_row = plan.w_stride;
  const int64_t by_cache = std::max<int64_t>(static_cast<int64_t>(kWeightPanelBytes / std::max<size_t>(w_row, 1)), 1);
  const int64_t by_balance = std::max<int64_t>(plan.n_out / (8 * static_cast<int64_t>(pool.size())), 1);
  int64_t chunk = std::min(by_cache, by_balance);
  if (chunk >= 16) chunk = chunk / 16 * 16;
  const int64_t n_chunks = (plan.n_out + chunk - 1) / chunk;
  const quant::VecDotFn dot = plan.kernel->dot;

  // The first token's pass streams the rows from memory, and the dot kernels ask for
  // nothing ahead: it asks for the rows about kRowPrefetchBytes on into L1 and
  // kL2RowPrefetchBytes on into L2 (matmul_tiles.h), as the single-token strip kernels
  // do; later tokens find the chunk in cache.
  const auto rows_ahead = [w_row](size_t bytes) {
    return static_cast<int64_t>((bytes + w_row - 1) / std::max<size_t>(w_row, 1));
  };
  const int64_t l1_ahead = std::max<int64_t>(1, rows_ahead(kRowPrefetchBytes));
  const int64_t l2_ahead = std::max<int64_t>(l1_ahead + 1, rows_ahead(kL2RowPrefetchBytes));
  const auto row_at = [&](int64_t r) { return plan.w + static_cast<size_t>(r) * w_row; };
  pool.parallel_for(n_chunks, [&](int64_t task, int) {
    const int64_t r0 = task * chunk;
    const int64_t r1 = std::min(r0 + chunk, plan.n_out);
    for (int64_t t = 0; t < plan.n_tokens; ++t) {
      const std::byte* a = plan.a + static_cast<size_t>(t) * plan.a_stride;
      float* y = plan.y + static_cast<size_t>(t) * plan.y_stride;
      for (int64_t r = r0; r < r1; ++r) {
        if (t == 0 && r + l1_ahead < plan.n_out) prefetch_bytes<3>(row_at(r + l1_ahead), w_row);
        if (t == 0 && r + l2_ahead < plan.n_out) prefetch_bytes<2>(row_at(r + l2_ahead), w_row);
        y[r] = dot(plan.n_in, row_at(r), a);
      }
    }
  });
}

void Matmul::plan_tiles(int n_threads, Plan& plan) {
  const int64_t threads = n_threads;
  if (plan.tile->repacks_rows) {
    // Panels of rows, each repacked once and run against every token, the tokens in
    // passes whose activations stay in L2 beside the repacked panel.
    const size_t repacked_row = tile_scratch_bytes(plan.n_in) / 8;
    const int64_t strip = plan.tile->strip_rows;
    const int64_t by_cache = std::max<int64_t>(static_cast<int64_t>(kWeightPanelBytes / repacked_row) / strip * strip, strip);
    const int64_t panels = (plan.n_tokens < kMinStripTokens ? kSingleTokenPanelsPerThread : kPanelsPerThread) * threads;
    const int64_t by_balance = round_up((plan.n_out + panels - 1) / panels, strip);
    // A tile of fewer than 4 tokens reads the rows as stored or kept (the kernels'
    // single-token path): no repacked panel to keep in cache, so each task streams as
    // many rows as balance allows (fewer jumps in the address stream of each thread).
    // A kernel that lays out the activations itself keeps no repacked panel either (its
    // strips go one at a time), and each of its passes over the tokens serves more rows.
    // Kept strips (plan.strips) that all the tokens pass over at once are read once, as
    // they lie, and the kernels ask for their bytes some way past the strip being
    // multiplied (run_strips16): long runs of rows keep those requests within the rows
    // the same thread reads next. In panels of a few strips handed out in turn, each
    // thread's requests fell in the other's rows, into the wrong core's L2.
    plan.cols_per_pass = std::max<int64_t>(static_cast<int64_t>(kTileActivationBytes / plan.a_stride) / 4 * 4, 4);
    const bool no_panel = plan.n_tokens < kMinStripTokens || plan.tile->prepare_activations != nullptr ||
                          (plan.strips != nullptr && plan.n_tokens <= plan.cols_per_pass);
    plan.panel_rows = no_panel ? by_balance : std::min({by_cache, by_balance, int64_t{256}});
    plan.tile_tokens = plan.n_tokens;
    // A repacked panel needs its rows' scratch; the paths without one need at most a
    // 16-row strip's (the single-token kernels lay a token out in it).
    plan.scratch_bytes = static_cast<size_t>(no_panel ? 2 : (plan.panel_rows + 7) / 8) * tile_scratch_bytes(plan.n_in);
    return;
  }
  // Panels of weight rows that fit in L2, times tiles of tokens whose activations do too.
  plan.tile_tokens = std::clamp<int64_t>(static_cast<int64_t>(kTileActivationBytes / plan.a_stride) / 4 * 4, 8, kMaxTileTokens);
  int64_t panel = static_cast<int64_t>(kWeightPanelBytes / std::max<size_t>(plan.w_stride, 1));
  panel = std::clamp<int64_t>(panel / 8 * 8, 8, 256);
  const int64_t by_balance = round_up(std::max<int64_t>(plan.n_out / (2 * threads), 1), 8);
  if (plan.n_tokens <= plan.tile_tokens) panel = std::min(panel, by_balance);
  plan.panel_rows = panel;
  plan.cols_per_pass = 0;
  plan.scratch_bytes = tile_scratch_bytes(plan.n_in);
}

void Matmul::run_tiled(ThreadPool& pool, std::span<const Plan> plans) {
  // The tasks of plan i are [first_task[i], first_task[i + 1]): its panels x token tiles.
  std::array<int64_t, kMaxShared + 1> first_task{};
  for (size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    const int64_t n_panels = (plan.n_out + plan.panel_rows - 1) / plan.panel_rows;
    const int64_t n_token_tiles = (plan.n_tokens + plan.tile_tokens - 1) / plan.tile_tokens;
    first_task[i + 1] = first_task[i] + n_panels * n_token_tiles;
  }
  pool.parallel_for(first_task[plans.size()], [&](int64_t task, int thread) {
    size_t i = 0;
    while (task >= first_task[i + 1]) ++i;
    const Plan& plan = plans[i];
    const int64_t local = task - first_task[i];
    const int64_t n_token_tiles = (plan.n_tokens + plan.tile_tokens - 1) / plan.tile_tokens;
    const int64_t r0 = (local / n_token_tiles) * plan.panel_rows;
    const int64_t t0 = (local % n_token_tiles) * plan.tile_tokens;
    TileJob job;
    job.n_in = plan.n_in;
    job.w = plan.w + static_cast<size_t>(r0) * plan.w_stride;
    job.w_stride = plan.w_stride;
    job.n_rows = std::min(plan.panel_rows, plan.n_out - r0);
    job.a = plan.a + static_cast<size_t>(t0) * plan.a_stride;
    job.a_stride = plan.a_stride;
    // A plan padded to kMinStripTokens (pad_to_strip_tokens) runs its real tokens only.
    job.n_cols = std::min(plan.tile_tokens, plan.n_real_tokens - t0);
    if (job.n_cols <= 0) return;
    job.y = plan.y + static_cast<size_t>(t0) * plan.y_stride + static_cast<size_t>(r0);
    job.y_stride = plan.y_stride;
    job.scratch = tile_scratch_[static_cast<size_t>(thread)].reserve(0);
    if (plan.a_sums != nullptr) {
      job.a_sums_stride = static_cast<size_t>(plan.n_in / quant::kQK);
      job.a_sums = plan.a_sums + static_cast<size_t>(t0) * job.a_sums_stride;
    }
    if (plan.a_scales != nullptr) {
      job.a_scales_stride = plan.a_scales_stride;
      job.a_scales = plan.a_scales + static_cast<size_t>(t0) * job.a_scales_stride;
    }
    job.cols_per_pass = plan.cols_per_pass;
    if (plan.strips != nullptr) job.strips = plan.strips + static_cast<size_t>(r0 / plan.tile->strip_rows) * plan.strip_bytes;
    if (t0 == 0) job.a_tiles = plan.a_tiles;  // the repacking kernels' tiles take every token
    if (lookahead_ != nullptr) job.lookahead = lookahead_->cursor(thread);
    plan.tile->run(job);
  });
}

}  // namespace pagoda::backend::cpu
