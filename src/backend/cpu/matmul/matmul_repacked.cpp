#include "backend/cpu/matmul/matmul_repacked.h"

#include <algorithm>

namespace pagoda::backend::cpu {
namespace {

// Rows repacked per task: a multiple of every kernel's strip rows.
constexpr int64_t kRowsPerTask = 256;

TileJob rows_job(const WeightRows& w, int64_t first, int64_t n_rows) {
  TileJob job;
  job.n_in = w.n_in;
  job.w = w.data + static_cast<size_t>(first) * w.stride;
  job.w_stride = w.stride;
  job.n_rows = n_rows;
  job.n_cols = 0;  // no tokens: the repacking streams the rows (its far prefetch)
  return job;
}

}  // namespace

void RepackedWeights::add_weight(const void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  weights_.emplace_back(begin, begin + bytes);
}

bool RepackedWeights::is_weight(const WeightRows& w) const {
  const auto begin = reinterpret_cast<uintptr_t>(w.data);
  const uintptr_t end = begin + static_cast<size_t>(w.n_rows - 1) * w.stride +
                        static_cast<size_t>(row_bytes(w.type, w.n_in));
  return std::any_of(weights_.begin(), weights_.end(),
                     [&](const auto& range) { return range.first <= begin && end <= range.second; });
}

const std::byte* RepackedWeights::find(ThreadPool& pool, const WeightRows& w, const TileKernel& kernel) {
  if (kernel.repack == nullptr || w.n_rows <= 0) return nullptr;
  if (const auto it = strips_.find(w); it != strips_.end()) return it->second.get();
  if (!is_weight(w)) return nullptr;
  const size_t bytes = kernel.repack(rows_job(w, 0, w.n_rows), nullptr);
  AlignedPtr strips = bytes <= budget_ - std::min(used_, budget_) ? allocate_aligned(bytes) : nullptr;
  if (strips != nullptr) {
    used_ += bytes;
    const int64_t n_tasks = (w.n_rows + kRowsPerTask - 1) / kRowsPerTask;
    std::byte* out = strips.get();
    pool.parallel_for(n_tasks, [&](int64_t task, int) {
      const int64_t first = task * kRowsPerTask;
      const size_t at = kernel.repack(rows_job(w, 0, first), nullptr);
      kernel.repack(rows_job(w, first, std::min(kRowsPerTask, w.n_rows - first)), out + at);
    });
  }
  return strips_.emplace(w, std::move(strips)).first->second.get();
}

}  // namespace pagoda::backend::cpu
