// matmul's host side: the checks of its views, and the choice of path by weight type
// and token count (matmul_vec.cu for a few tokens, matmul_gemm.cu for more).

#include <algorithm>
#include <string>

#include "backend/cuda/ops.h"
#include "backend/cuda/weight_kernels.h"

namespace pagoda::backend::cuda {
namespace {

std::string shape_text(const TensorView& v) {
  std::string text = "[";  // appended piece by piece: GCC 12 warns (-Wrestrict) on "[" + string
  text += std::to_string(v.n_rows());
  text += "][";
  text += std::to_string(v.ne[0]);
  text += "]";
  return text;
}

// w: [n_out][n_in] of a supported type; x: [n][n_in] f32; y: [n][n_out] f32.
Status check_matmul_views(const TensorView& w, const TensorView& x, const TensorView& y) {
  if (!matmul_supports(w.type)) {
    return unsupported("matmul: weights of type " + std::string(dtype_name(w.type)) + " are not supported on CUDA");
  }
  if (w.ne[2] != 1 || w.ne[3] != 1) return invalid_argument("matmul: the weights must be a matrix");
  PAGODA_TRY(weights::check_weight_rows("matmul: w", w));
  PAGODA_TRY(weights::check_f32_rows("matmul: x", x));
  PAGODA_TRY(weights::check_f32_rows("matmul: y", y));
  if (x.ne[0] != w.ne[0] || y.ne[0] != w.ne[1] || x.n_rows() != y.n_rows()) {
    return invalid_argument("matmul: shapes do not match: w " + shape_text(w) + ", x " + shape_text(x) + ", y " +
                            shape_text(y) + " (want x [n][" + std::to_string(w.ne[0]) + "], y [n][" +
                            std::to_string(w.ne[1]) + "])");
  }
  if (w.ne[0] == 0 && y.n_elements() > 0) return invalid_argument("matmul: weights with empty rows");
  return {};
}

// Rows [first, first + count) of a 2-D f32 matrix view.
TensorView row_slice(const TensorView& m, int64_t first, int64_t count) {
  TensorView v = m;
  v.data = static_cast<char*>(m.data) + static_cast<size_t>(first) * m.nb[1];
  v.ne[1] = count;
  v.nb[2] = v.nb[1] * static_cast<size_t>(count);
  v.nb[3] = v.nb[2];
  return v;
}

// The few-token kernel over groups of kVecMaxTokens tokens: each token's outputs are the
// kernel's, whatever else is in the batch (CudaBackendOptions::batch_invariant).
Status matmul_vec_groups(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  if (x.ne[2] != 1 || x.ne[3] != 1 || y.ne[2] != 1 || y.ne[3] != 1) {
    return invalid_argument("matmul: batch-invariant products take 2-D x and y");
  }
  for (int64_t first = 0; first < x.ne[1]; first += weights::kVecMaxTokens) {
    const int64_t count = std::min<int64_t>(weights::kVecMaxTokens, x.ne[1] - first);
    PAGODA_TRY(weights::matmul_vec(ctx, w, row_slice(x, first, count), row_slice(y, first, count)));
  }
  return {};
}

}  // namespace

bool matmul_supports(DType type) {
  switch (type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
      return true;
    default:
      return false;
  }
}

Status matmul(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  PAGODA_TRY(check_matmul_views(w, x, y));
  const int64_t n_tokens = x.n_rows();
  if (n_tokens == 0 || w.ne[1] == 0) return {};
  if (n_tokens <= weights::kVecMaxTokens) return weights::matmul_vec(ctx, w, x, y);
  if (ctx.batch_invariant) return matmul_vec_groups(ctx, w, x, y);
  if (w.type == DType::F32 || w.type == DType::BF16) return weights::matmul_gemm_f32(ctx, w, x, y);
  return weights::matmul_gemm_f16(ctx, w, x, y);
}

}  // namespace pagoda::backend::cuda
