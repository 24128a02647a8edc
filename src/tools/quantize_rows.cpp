#include "tools/quantize_rows.h"

#include <algorithm>
#include <string>

#include "quant/quantize.h"

namespace pagoda::tools {
namespace {

constexpr int64_t kValuesPerTask = 1 << 18;

}  // namespace

Expected<std::vector<uint8_t>> quantize_rows(DType type, int64_t row, int64_t n_rows,
                                             ThreadPool& pool, const RowSource& source,
                                             std::string_view name) {
  if (row <= 0 || n_rows <= 0) return std::vector<uint8_t>();
  const size_t bytes_per_row = static_cast<size_t>(row_bytes(type, row));
  std::vector<uint8_t> bytes(bytes_per_row * static_cast<size_t>(n_rows));
  const int64_t rows_per_task = std::max<int64_t>(1, kValuesPerTask / row);
  const int64_t n_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  std::vector<Status> failures(static_cast<size_t>(pool.size()));
  pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
    std::vector<float>& values = scratch[static_cast<size_t>(thread)];
    values.resize(static_cast<size_t>(row));
    Status& failure = failures[static_cast<size_t>(thread)];
    const int64_t end = std::min(n_rows, (task + 1) * rows_per_task);
    for (int64_t r = task * rows_per_task; r < end && failure.ok(); ++r) {
      failure = source(r, values);
      if (failure.ok()) {
        failure = quant::quantize_row(type, values.data(), &bytes[bytes_per_row * static_cast<size_t>(r)], row);
      }
    }
  });
  for (const Status& failure : failures) {
    if (!failure.ok()) return Status(failure.code(), std::string(name) + ": " + failure.message());
  }
  return bytes;
}

}  // namespace pagoda::tools
