// get_rows: embedding lookup, dequantizing the chosen rows of any table type to f32.

#include <string>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"
#include "quant/dequantize.h"

namespace pagoda::backend::cpu {

Status get_rows(ThreadPool& pool, const TensorView& table, std::span<const int32_t> ids,
                const TensorView& out) {
  if (table.data == nullptr || !quant::can_dequantize(table.type)) {
    return unsupported("get_rows: cannot read a table of type " + std::string(dtype_name(table.type)));
  }
  const int64_t dim = table.ne[0];
  if (!is_f32_rows(out) || out.ne[0] != dim || out.n_rows() != static_cast<int64_t>(ids.size())) {
    return invalid_argument("get_rows: out must be [ids.size()][table row length] f32");
  }
  const int64_t n_table_rows = table.n_rows();
  for (const int32_t id : ids) {
    if (id < 0 || id >= n_table_rows) {
      return invalid_argument("get_rows: id " + std::to_string(id) + " outside the table's " +
                              std::to_string(n_table_rows) + " rows");
    }
  }
  if (dim % traits(table.type).block_size != 0) {
    return invalid_argument("get_rows: row length is not a multiple of the table's block size");
  }
  parallel_rows(pool, static_cast<int64_t>(ids.size()), dim, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      // Cannot fail: type and length were checked above.
      (void)quant::dequantize_row(table.type, row_at<const void>(table, ids[static_cast<size_t>(i)]),
                                  row_at<float>(out, i), dim);
    }
  });
  return {};
}

}  // namespace pagoda::backend::cpu
