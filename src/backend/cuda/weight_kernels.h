#pragma once
// What the weight ops' files (get_rows.cu, matmul.cu, matmul_vec*.cu,
// matmul_gemm.cu, dequantize_rows.cu) share: the launchers of their kernels and the host-side checks of
// their views. Plain C++: included by the .cu files only.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "backend/backend.h"
#include "backend/cuda/context.h"
#include "backend/tensor.h"
#include "core/dtype.h"
#include "core/status.h"

namespace pagoda::backend::cuda::weights {

// matmul multiplies up to this many tokens with the streaming vector kernel; more go
// through cuBLAS.
constexpr int64_t kVecMaxTokens = 8;

// Rows [first_row, first_row + n_rows) of a weight matrix (or the rows ids[0..n_rows) of
// a table) dequantized into dst, row r at dst + r * dst_stride elements.
struct DequantizeRowsArgs {
  const void* src = nullptr;       // device, rows of src_type
  DType src_type = DType::F32;
  size_t src_row_stride = 0;       // bytes between source rows
  int64_t n_src_rows = 0;          // rows of src: ids outside [0, n_src_rows) give NaN rows
  const int32_t* ids = nullptr;    // device [n_rows], or null for consecutive rows
  int64_t first_row = 0;           // first source row when ids is null
  int64_t n_rows = 0;              // rows to write
  int64_t n_values = 0;            // values per row
  void* dst = nullptr;             // device, float or __half
  int64_t dst_stride = 0;          // elements between destination rows
};

// dst as f32: every weight format (dequantize_rows.cu).
Status dequantize_rows_f32(const Context& ctx, const DequantizeRowsArgs& args);
// dst as f16 (rounded to nearest even): the block formats only (not F32, F16, BF16).
Status dequantize_rows_f16(const Context& ctx, const DequantizeRowsArgs& args);

// The paths of matmul, on views matmul has checked (matmul_vec.cu, matmul_gemm.cu).
//
// The few-token kernel: the products y = x W^T of `targets` (1 to kVecMaxTargets
// weights of one type and one row length) in one launch, x [n][n_in] with
// n <= kVecMaxTokens.
constexpr size_t kVecMaxTargets = 3;
Status matmul_vec(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets);
// out = silu(x W_gate^T) * (x W_up^T) for one token by the few-token kernel in one
// launch: each gate row and its up row streamed by one warp, the activation applied to
// the two sums as the silu_mul op computes it (so the same bits as the two products,
// which the kernel sums alike, then silu_mul). w_gate and w_up: one type and shape.
Status matmul_vec_swiglu(const Context& ctx, const TensorView& x, const TensorView& w_gate,
                         const TensorView& w_up, const TensorView& out);
// The first few-token kernel (matmul_vec_rowwise.cu), for side-by-side measurements.
Status matmul_vec_rowwise(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y);
// Block formats and F16: W in f16 pieces, x rounded to f16, cublasGemmEx (f32 compute).
Status matmul_gemm_f16(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y);
// The same for several weights of x's row length: x rounded to f16 once for all of them.
Status matmul_gemm_f16(const Context& ctx, const TensorView& x, std::span<const MatmulTarget> targets);
// The weight types whose many-token products go through the f16 GEMM (all but F32 and
// BF16, which keep f32 products).
constexpr bool uses_f16_gemm(DType type) { return type != DType::F32 && type != DType::BF16; }
// F32 and BF16: W (BF16 dequantized in f32 pieces) and x in f32, cublasSgemm.
Status matmul_gemm_f32(const Context& ctx, const TensorView& w, const TensorView& x, const TensorView& y);

// --- host-side helpers --------------------------------------------------------------

// True for the types whose block holds several values (the ones dequantized to f16 for
// cuBLAS); false for F32, F16 and BF16.
template <DType T>
constexpr bool is_block_format() {
  return T != DType::F32 && T != DType::F16 && T != DType::BF16;
}

// Calls fn(std::integral_constant<DType, T>{}) for the weight type `type`; false (and no
// call) for a type matmul and get_rows do not read.
template <typename Fn>
bool visit_weight_format(DType type, Fn&& fn) {
  switch (type) {
#define PAGODA_WEIGHT_FORMAT_CASE(T) \
  case DType::T: fn(std::integral_constant<DType, DType::T>{}); return true;
    PAGODA_WEIGHT_FORMAT_CASE(F32)
    PAGODA_WEIGHT_FORMAT_CASE(F16)
    PAGODA_WEIGHT_FORMAT_CASE(BF16)
    PAGODA_WEIGHT_FORMAT_CASE(Q4_0)
    PAGODA_WEIGHT_FORMAT_CASE(Q4_1)
    PAGODA_WEIGHT_FORMAT_CASE(Q5_0)
    PAGODA_WEIGHT_FORMAT_CASE(Q5_1)
    PAGODA_WEIGHT_FORMAT_CASE(Q8_0)
    PAGODA_WEIGHT_FORMAT_CASE(Q2_K)
    PAGODA_WEIGHT_FORMAT_CASE(Q3_K)
    PAGODA_WEIGHT_FORMAT_CASE(Q4_K)
    PAGODA_WEIGHT_FORMAT_CASE(Q5_K)
    PAGODA_WEIGHT_FORMAT_CASE(Q6_K)
    PAGODA_WEIGHT_FORMAT_CASE(IQ4_NL)
    PAGODA_WEIGHT_FORMAT_CASE(IQ4_XS)
#undef PAGODA_WEIGHT_FORMAT_CASE
    default:
      return false;
  }
}

// ok, or an internal error naming `what` with the pending launch error.
inline Status launch_status(const char* what) {
  const cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return {};
  return internal_error(std::string(what) + ": " + cudaGetErrorString(error) + " (" +
                        cudaGetErrorName(error) + ")");
}

inline bool aligned_to(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

// Whether row i of the view (i over ne[1] * ne[2] * ne[3]) starts at data + i * nb[1].
inline bool rows_evenly_strided(const TensorView& v) {
  return (v.ne[2] == 1 || v.nb[2] == v.nb[1] * static_cast<size_t>(v.ne[1])) &&
         (v.ne[3] == 1 || v.nb[3] == v.nb[1] * static_cast<size_t>(v.ne[1] * v.ne[2]));
}

// `what`: "matmul: x", ... Checks an f32 matrix view: contiguous elements, rows evenly
// strided by a multiple of 4 bytes, not overlapping.
inline Status check_f32_rows(const std::string& what, const TensorView& v) {
  if (v.type != DType::F32) return invalid_argument(what + " must be f32, not " + std::string(dtype_name(v.type)));
  if (v.ne[0] < 0 || v.ne[1] < 0 || v.ne[2] < 0 || v.ne[3] < 0) return invalid_argument(what + " has a negative size");
  if (v.n_elements() == 0) return {};
  if (v.data == nullptr) return invalid_argument(what + " has no data");
  if (v.nb[0] != sizeof(float) || !aligned_to(v.data, sizeof(float)) || v.nb[1] % sizeof(float) != 0) {
    return invalid_argument(what + " must have contiguous, 4-byte aligned f32 elements");
  }
  if (!rows_evenly_strided(v)) return invalid_argument(what + ": rows must be evenly strided (nb[1])");
  if (v.n_rows() > 1 && v.nb[1] < static_cast<size_t>(v.ne[0]) * sizeof(float)) {
    return invalid_argument(what + ": rows overlap (nb[1] " + std::to_string(v.nb[1]) + " bytes < " +
                            std::to_string(v.ne[0]) + " floats)");
  }
  return {};
}

// Checks a weight view of a readable type (supported by the caller's check): whole
// blocks per row, rows evenly strided at addresses the kernels' 16-bit (F32: 32-bit)
// loads can read.
inline Status check_weight_rows(const std::string& what, const TensorView& w) {
  const DTypeTraits& t = traits(w.type);
  if (w.ne[0] < 0 || w.ne[1] < 0 || w.ne[2] < 0 || w.ne[3] < 0) return invalid_argument(what + " has a negative size");
  if (w.ne[0] % t.block_size != 0) {
    return invalid_argument(what + ": rows of " + std::to_string(w.ne[0]) + " values are not whole " +
                            std::string(t.name) + " blocks of " + std::to_string(t.block_size));
  }
  if (w.n_elements() == 0) return {};
  if (w.data == nullptr) return invalid_argument(what + " has no data");
  const size_t alignment = w.type == DType::F32 ? 4 : 2;
  if (!aligned_to(w.data, alignment) || w.nb[1] % alignment != 0) {
    return invalid_argument(what + ": data and row stride must be " + std::to_string(alignment) + "-byte aligned");
  }
  if (!rows_evenly_strided(w)) return invalid_argument(what + ": rows must be evenly strided (nb[1])");
  if (w.n_rows() > 1 && w.nb[1] < w.row_bytes()) return invalid_argument(what + ": rows overlap");
  return {};
}

}  // namespace pagoda::backend::cuda::weights
