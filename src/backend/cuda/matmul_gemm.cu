// y = x W^T for many tokens through cuBLAS.
//
// Row-major y[n][n_out] = x[n][n_in] W^T, W[n_out][n_in] row-major, is in cuBLAS's
// column-major terms C (n_out x n, ldc = y's row stride) = A^T B with A (n_in x n_out,
// lda = W's row stride) and B (n_in x n, ldb = x's row stride), all strides in elements.
// W is multiplied in pieces of rows (C's rows first .. first + rows) so that its
// dequantized copy fits the workspace.
//
// Block formats: each piece dequantized to f16, x rounded to f16 once, cublasGemmEx with
// f32 accumulation and f32 output; F16 weights are used as they are. F32 and BF16 weights
// stay in f32 (BF16 pieces dequantized exactly to f32): cublasSgemm, under the handle's
// default math mode (no TF32), so f32 models keep f32 products.

#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <string>

#include "backend/cuda/weight_kernels.h"

namespace pagoda::backend::cuda::weights {
namespace {

constexpr int kConvertThreads = 256;
constexpr int64_t kMaxConvertBlocks = 65536;  // the kernel loops over what more blocks would take

// out[r][c] = half(x[r * x_stride + c]): x's rows packed into a contiguous f16 matrix.
__global__ void __launch_bounds__(kConvertThreads)
f32_rows_to_f16_kernel(const float* x, int64_t x_stride, int64_t n_rows, int64_t n_cols, __half* out) {
  const int64_t total = n_rows * n_cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t r = i / n_cols;
    const int64_t c = i % n_cols;
    out[i] = __float2half_rn(x[r * x_stride + c]);
  }
}

std::string describe_sizes(const TensorView& w, int64_t n_tokens) {
  return std::to_string(w.ne[1]) + "x" + std::to_string(w.ne[0]) + " " + std::string(dtype_name(w.type)) +
         " weights, " + std::to_string(n_tokens) + " tokens";
}

Status cublas_status(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return {};
  return internal_error(std::string(what) + ": " + cublasGetStatusString(status));
}

// cuBLAS takes int sizes and strides; the alpha and beta below live on the host.
Status check_cublas_limits(const cublasHandle_t handle, std::initializer_list<int64_t> values) {
  for (const int64_t v : values) {
    if (v > INT_MAX) return unsupported("matmul: size or stride " + std::to_string(v) + " exceeds cuBLAS's int");
  }
  cublasPointerMode_t mode;
  PAGODA_TRY(cublas_status(cublasGetPointerMode(handle, &mode), "cublasGetPointerMode"));
  if (mode != CUBLAS_POINTER_MODE_HOST) return internal_error("matmul: the cuBLAS handle must use host pointers");
  return {};
}

// Rows of W per piece when each takes row_bytes of workspace and `available` bytes are
// left (Workspace::take rounds requests up to 256 bytes): all of them, else a multiple of
// 64 where at least 64 fit; 0 when not even one fits.
int64_t rows_per_piece(size_t available, size_t row_bytes, int64_t n_out) {
  const int64_t fit = static_cast<int64_t>((available & ~size_t{255}) / row_bytes);
  if (fit >= n_out) return n_out;
  return fit >= 64 ? fit / 64 * 64 : fit;
}

// C rows [first, first + rows) of all n tokens from an f16 W piece (lda halves per row)
// and the f16 x (n_in halves per row).
Status gemm_f16(const Context& ctx, const __half* w_piece, int64_t lda, int64_t rows, const __half* x16,
                int64_t n_tokens, int64_t n_in, float* y_piece, int64_t ldc) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublas_status(
      cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(n_tokens),
                   static_cast<int>(n_in), &alpha, w_piece, CUDA_R_16F, static_cast<int>(lda), x16, CUDA_R_16F,
                   static_cast<int>(n_in), &beta, y_piece, CUDA_R_32F, static_cast<int>(ldc), CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT),
      "matmul: cublasGemmEx");
}

Status gemm_f32(const Context& ctx, const float* w_piece, int64_t lda, int64_t rows, const float* x,
                int64_t ldb, int64_t n_tokens, int64_t n_in, float* y_piece, int64_t ldc) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublas_status(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                                   static_cast<int>(n_tokens), static_cast<int>(n_in), &alpha, w_piece,
                                   static_cast<int>(lda), x, static_cast<int>(ldb), &beta, y_piece,
                                   static_cast<int>(ldc)),
                       "matmul: cublasSgemm");
}

// x's rows as a contiguous f16 matrix [n_tokens][n_in] in the workspace.
Expected<__half*> convert_x_to_f16(const Context& ctx, const TensorView& w, const TensorView& x) {
  const int64_t n_tokens = x.n_rows(), n_in = x.ne[0];
  const size_t bytes = static_cast<size_t>(n_tokens * n_in) * sizeof(__half);
  auto* x16 = static_cast<__half*>(ctx.workspace->take(bytes));
  if (x16 == nullptr) {
    return resource_exhausted("matmul: " + describe_sizes(w, n_tokens) + ": x in f16 needs " + std::to_string(bytes) +
                              " bytes of workspace, " + std::to_string(ctx.workspace->remaining()) + " left");
  }
  const int64_t n_blocks = std::min((n_tokens * n_in + kConvertThreads - 1) / kConvertThreads, kMaxConvertBlocks);
  f32_rows_to_f16_kernel<<<static_cast<unsigned>(n_blocks), kConvertThreads, 0, ctx.stream>>>(
      static_cast<const float*>(x.data), static_cast<int64_t>(x.nb[1] / sizeof(float)), n_tokens, n_in, x16);
  PAGODA_TRY(launch_status("matmul: x to f16"));
  return x16;
}

// Dequantizes W into the workspace piece by piece (`dequantize`: DequantizeRowsArgs ->
// Status, writing Piece values) and multiplies each piece (`gemm(piece, first, count)`),
// or says that not even one row fits.
template <typename Piece, typename Dequantize, typename Gemm>
Status multiply_in_pieces(const Context& ctx, const TensorView& w, int64_t n_tokens, Dequantize dequantize,
                          Gemm gemm) {
  const int64_t n_in = w.ne[0], n_out = w.ne[1];
  const size_t piece_row_bytes = static_cast<size_t>(n_in) * sizeof(Piece);
  const int64_t rows = rows_per_piece(ctx.workspace->remaining(), piece_row_bytes, n_out);
  void* pieces = rows > 0 ? ctx.workspace->take(static_cast<size_t>(rows) * piece_row_bytes) : nullptr;
  if (pieces == nullptr) {
    return resource_exhausted("matmul: " + describe_sizes(w, n_tokens) + ": one dequantized weight row needs " +
                              std::to_string(piece_row_bytes) + " bytes of workspace, " +
                              std::to_string(ctx.workspace->remaining()) + " left of " +
                              std::to_string(ctx.workspace->capacity()));
  }
  for (int64_t first = 0; first < n_out; first += rows) {
    DequantizeRowsArgs args;
    args.src = w.data;
    args.src_type = w.type;
    args.src_row_stride = w.nb[1];
    args.n_src_rows = n_out;
    args.first_row = first;
    args.n_rows = std::min(rows, n_out - first);
    args.n_values = n_in;
    args.dst = pieces;
    args.dst_stride = n_in;
    PAGODA_TRY(dequantize(ctx, args));
    // The stream orders this GEMM after the dequantization and before the next piece's.
    PAGODA_TRY(gemm(static_cast<const Piece*>(pieces), first, args.n_rows));
  }
  return {};
}

// y = x W^T from x already in f16 (x16: [n_tokens][n_in]).
Status gemm_f16_from(const Context& ctx, const TensorView& w, const __half* x16, int64_t n_tokens,
                     const TensorView& y) {
  const int64_t n_in = w.ne[0], n_out = w.ne[1];
  const int64_t ldc = static_cast<int64_t>(y.nb[1] / sizeof(float));
  // A single row's stride is never stepped over; cuBLAS still wants lda >= n_in.
  const int64_t lda = n_out > 1 ? static_cast<int64_t>(w.nb[1] / sizeof(__half)) : n_in;
  PAGODA_TRY(check_cublas_limits(ctx.cublas, {n_tokens, n_in, n_out, ldc, lda}));
  float* y_data = static_cast<float*>(y.data);
  if (w.type == DType::F16) {
    return gemm_f16(ctx, static_cast<const __half*>(w.data), lda, n_out, x16, n_tokens, n_in, y_data, ldc);
  }
  ScratchScope pieces(*ctx.workspace);
  return multiply_in_pieces<__half>(ctx, w, n_tokens, dequantize_rows_f16,
                                    [&](const __half* piece, int64_t first, int64_t count) {
                                      return gemm_f16(ctx, piece, n_in, count, x16, n_tokens, n_in, y_data + first, ldc);
                                    });
}

}  // namespace

Status matmul_gemm_f16(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  const MatmulTarget target{w, y};
  return matmul_gemm_f16(ctx, x, std::span<const MatmulTarget>(&target, 1));
}

Status matmul_gemm_f16(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets) {
  if (targets.empty()) return {};
  ScratchScope scratch(*ctx.workspace);
  PAGODA_ASSIGN_OR_RETURN(const __half* x16, convert_x_to_f16(ctx, targets[0].w, x));
  for (const MatmulTarget& t : targets) {
    if (t.w.ne[0] != x.ne[0] || !uses_f16_gemm(t.w.type)) {
      return internal_error("matmul: the f16 GEMMs of one x need block-format or F16 weights of its row length");
    }
    PAGODA_TRY(gemm_f16_from(ctx, t.w, x16, x.n_rows(), t.y));
  }
  return {};
}

Status matmul_gemm_f32(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y) {
  const int64_t n_tokens = x.n_rows(), n_in = w.ne[0], n_out = w.ne[1];
  const int64_t ldb = static_cast<int64_t>(x.nb[1] / sizeof(float));
  const int64_t ldc = static_cast<int64_t>(y.nb[1] / sizeof(float));
  const int64_t lda = n_out > 1 ? static_cast<int64_t>(w.nb[1] / sizeof(float)) : n_in;  // as above
  PAGODA_TRY(check_cublas_limits(ctx.cublas, {n_tokens, n_in, n_out, ldb, ldc, lda}));
  const float* x_data = static_cast<const float*>(x.data);
  float* y_data = static_cast<float*>(y.data);
  if (w.type == DType::F32) {
    return gemm_f32(ctx, static_cast<const float*>(w.data), lda, n_out, x_data, ldb, n_tokens, n_in, y_data, ldc);
  }
  if (w.type != DType::BF16) return internal_error("matmul: the f32 GEMM takes F32 or BF16 weights");
  ScratchScope scratch(*ctx.workspace);
  return multiply_in_pieces<float>(ctx, w, n_tokens, dequantize_rows_f32,
                                   [&](const float* piece, int64_t first, int64_t count) {
                                     return gemm_f32(ctx, piece, n_in, count, x_data, ldb, n_tokens, n_in,
                                                     y_data + first, ldc);
                                   });
}

}  // namespace pagoda::backend::cuda::weights
