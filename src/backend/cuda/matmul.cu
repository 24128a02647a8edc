// matmul's host side: the checks of its views, and the choice of path by weight type
// and token count (matmul_vec.cu for a few tokens, matmul_gemm.cu for more); the
// products of one x with several weights in one launch where the few-token kernel
// takes them (matmuls, and the SwiGLU pair with its activation).

#include <algorithm>
#include <span>
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

// The few-token kernel for one weight (n <= kVecMaxTokens).
Status matmul_vec_one(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  if (ctx.vec_kernel == VecKernel::kRowwise) return weights::matmul_vec_rowwise(ctx, w, x, y);
  const MatmulTarget target{w, y};
  return weights::matmul_vec(ctx, x, std::span<const MatmulTarget>(&target, 1));
}

// The few-token kernel over groups of kVecMaxTokens tokens: each token's outputs are the
// kernel's, whatever else is in the batch (CudaBackendOptions::batch_invariant).
Status matmul_vec_groups(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  if (x.ne[2] != 1 || x.ne[3] != 1 || y.ne[2] != 1 || y.ne[3] != 1) {
    return invalid_argument("matmul: batch-invariant products take 2-D x and y");
  }
  for (int64_t first = 0; first < x.ne[1]; first += weights::kVecMaxTokens) {
    const int64_t count = std::min<int64_t>(weights::kVecMaxTokens, x.ne[1] - first);
    PAGODA_TRY(matmul_vec_one(ctx, w, row_slice(x, first, count), row_slice(y, first, count)));
  }
  return {};
}

// Whether the few-token kernel can take these products in one launch: a few tokens, at
// most kVecMaxTargets weights of one type and row length, their y rows equally strided.
bool one_vec_launch(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  if (ctx.vec_kernel == VecKernel::kRowwise || x.n_rows() > weights::kVecMaxTokens || targets.size() > weights::kVecMaxTargets) {
    return false;
  }
  for (const MatmulTarget& t : targets) {
    if (t.w.type != targets[0].w.type || t.w.ne[0] != targets[0].w.ne[0] || t.y.nb[1] != targets[0].y.nb[1] ||
        t.y.ne[2] != 1 || t.y.ne[3] != 1) {
      return false;
    }
  }
  return x.ne[2] == 1 && x.ne[3] == 1;
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
  if (n_tokens <= weights::kVecMaxTokens) return matmul_vec_one(ctx, w, x, y);
  if (ctx.batch_invariant) return matmul_vec_groups(ctx, w, x, y);
  if (!weights::uses_f16_gemm(w.type)) return weights::matmul_gemm_f32(ctx, w, x, y);
  return weights::matmul_gemm_f16(ctx, w, x, y);
}

Status matmuls(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  for (const MatmulTarget& t : targets) PAGODA_TRY(check_matmul_views(t.w, x, t.y));
  if (x.n_rows() == 0) return {};
  if (one_vec_launch(ctx, x, targets)) return weights::matmul_vec(ctx, x, targets);
  const bool one_f16_x = x.n_rows() > weights::kVecMaxTokens && !ctx.batch_invariant &&
                         std::all_of(targets.begin(), targets.end(), [](const MatmulTarget& t) {
                           return weights::uses_f16_gemm(t.w.type);
                         });
  if (one_f16_x) return weights::matmul_gemm_f16(ctx, x, targets);  // x rounded to f16 once
  for (const MatmulTarget& t : targets) PAGODA_TRY(matmul(ctx, t.w, x, t.y));
  return {};
}

Status matmuls_swiglu(const Context& ctx, const TensorView& x, const TensorView& w_gate, const TensorView& w_up,
                      const TensorView& gate, const TensorView& up, const TensorView& out) {
  PAGODA_TRY(check_matmul_views(w_gate, x, gate));
  PAGODA_TRY(check_matmul_views(w_up, x, up));
  PAGODA_TRY(weights::check_f32_rows("matmul_swiglu: out", out));
  if (gate.ne[0] != up.ne[0] || out.ne[0] != gate.ne[0] || out.n_rows() != gate.n_rows()) {
    return invalid_argument("matmul_swiglu: gate, up and out must have one shape");
  }
  if (x.n_rows() == 0) return {};
  const MatmulTarget fused[] = {{w_gate, out}, {w_up, out}};
  if (x.n_rows() == 1 && one_vec_launch(ctx, x, fused)) {  // gate and up: one shape, checked above
    return weights::matmul_vec_swiglu(ctx, x, w_gate, w_up, out);
  }
  const MatmulTarget pair[] = {{w_gate, gate}, {w_up, up}};
  PAGODA_TRY(matmuls(ctx, x, pair));
  return silu_mul(ctx, gate, up, out);
}

}  // namespace pagoda::backend::cuda
