// get_rows: out[i] = table row ids[i] dequantized to f32, bit-identical with
// quant::dequantize_row (the kernel is dequantize_rows.cu's, reading rows through ids).

#include <string>

#include "backend/cuda/ops.h"
#include "backend/cuda/weight_kernels.h"

namespace pagoda::backend::cuda {

Status get_rows(const Context& ctx, const TensorView& table, const int32_t* ids, int64_t n_ids,
                const TensorView& out) {
  if (!matmul_supports(table.type)) {
    return unsupported("get_rows: tables of type " + std::string(dtype_name(table.type)) + " are not supported on CUDA");
  }
  PAGODA_TRY(weights::check_weight_rows("get_rows: table", table));
  PAGODA_TRY(weights::check_f32_rows("get_rows: out", out));
  if (n_ids < 0 || (n_ids > 0 && ids == nullptr)) return invalid_argument("get_rows: no ids");
  if (out.ne[0] != table.ne[0] || out.n_rows() != n_ids) {
    return invalid_argument("get_rows: out is [" + std::to_string(out.n_rows()) + "][" + std::to_string(out.ne[0]) +
                            "], want [" + std::to_string(n_ids) + "][" + std::to_string(table.ne[0]) + "]");
  }
  weights::DequantizeRowsArgs args;
  args.src = table.data;
  args.src_type = table.type;
  args.src_row_stride = table.nb[1];
  args.n_src_rows = table.n_rows();
  args.ids = ids;
  args.n_rows = n_ids;
  args.n_values = table.ne[0];
  args.dst = out.data;
  args.dst_stride = static_cast<int64_t>(out.nb[1] / sizeof(float));
  return weights::dequantize_rows_f32(ctx, args);
}

}  // namespace pagoda::backend::cuda
