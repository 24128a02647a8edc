#pragma once
// Walking the rows of a TensorView (up to three row dimensions: a head view is
// [head_dim][n_heads][n_tokens]) and splitting row ranges over the thread pool.

#include <algorithm>
#include <cstdint>

#include "backend/tensor.h"
#include "core/thread_pool.h"

namespace pagoda::backend::cpu {

// Row r of v in row-major order over (ne[1], ne[2], ne[3]).
template <typename T>
T* row_at(const TensorView& v, int64_t r) {
  const int64_t i1 = r % v.ne[1];
  const int64_t rest = r / v.ne[1];
  return v.row<T>(i1, rest % v.ne[2], rest / v.ne[2]);
}

// Below this many values an elementwise op runs on the calling thread: waking the
// pool costs more than the work.
inline constexpr int64_t kMinValuesPerTask = 4 * 1024;

// Calls fn(row_begin, row_end) over [0, n_rows) in chunks of at least
// kMinValuesPerTask values (`row_values` values per row), spread over the pool.
template <typename Fn>
void parallel_rows(ThreadPool& pool, int64_t n_rows, int64_t row_values, Fn&& fn) {
  if (n_rows <= 0) return;
  const int64_t total = n_rows * std::max<int64_t>(row_values, 1);
  const int64_t by_size = std::max<int64_t>(total / kMinValuesPerTask, 1);
  const int64_t n_tasks = std::min<int64_t>({n_rows, by_size, 4 * static_cast<int64_t>(pool.size())});
  if (n_tasks <= 1) {
    fn(int64_t{0}, n_rows);
    return;
  }
  pool.parallel_for(n_tasks, [&](int64_t task, int) {
    fn(n_rows * task / n_tasks, n_rows * (task + 1) / n_tasks);
  });
}

}  // namespace pagoda::backend::cpu
