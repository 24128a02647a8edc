// RMSNorm and LayerNorm, in the reference CPU build's order of operations: sums in
// double over float terms, the mean and scale rounded to float, then the row scaled,
// then multiplied by the weight (and the bias added) as separate float steps.

#include <algorithm>
#include <cmath>

#include "backend/cpu/ops/norms.h"
#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"

namespace pagoda::backend::cpu {
namespace {

bool is_f32_vector(const TensorView& v, int64_t n) {
  return v.data != nullptr && v.type == DType::F32 && v.ne[0] == n && v.n_rows() == 1;
}

// Sum of v[i]^2: float sums of 8 squares, in the order the reference's vectorized
// variance adds them, accumulated in double; the last n % 8 squares in double.
double sum_of_squares(const float* v, int64_t n) {
  double sum = 0.0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float s[8];
    for (int l = 0; l < 8; ++l) s[l] = v[i + l] * v[i + l];
    sum += static_cast<double>(((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7])));
  }
  for (; i < n; ++i) sum += static_cast<double>(v[i] * v[i]);
  return sum;
}

// y = x / rms(x) * w for rows [begin, end) of x (n values each).
void rms_norm_rows(Isa isa, const TensorView& x, const float* w, float eps, const TensorView& y, int64_t begin,
                   int64_t end) {
  const int64_t n = x.ne[0];
  for (int64_t first = begin; first < end; first += kSumRows) {
    const int n_rows = static_cast<int>(std::min<int64_t>(kSumRows, end - first));
    const float* in[kSumRows];
    double sums[kSumRows];
    for (int k = 0; k < n_rows; ++k) in[k] = row_at<const float>(x, first + k);
    if (isa != Isa::kScalar) {
      avx2::sums_of_squares_rows(in, n_rows, n, sums);
    } else {
      for (int k = 0; k < n_rows; ++k) {
        sums[k] = 0.0;
        for (int64_t i = 0; i < n; ++i) sums[k] += static_cast<double>(in[k][i] * in[k][i]);
      }
    }
    for (int k = 0; k < n_rows; ++k) {
      const float mean = static_cast<float>(sums[k] / static_cast<double>(n));
      const float scale = 1.0f / std::sqrt(mean + eps);
      float* out = row_at<float>(y, first + k);
      for (int64_t i = 0; i < n; ++i) out[i] = in[k][i] * scale * w[i];
    }
  }
}

}  // namespace

Status rms_norm(ThreadPool& pool, Isa isa, const TensorView& x, const TensorView& weight, float eps,
                const TensorView& y) {
  if (!is_f32_rows(x) || !is_f32_rows(y) || !same_shape(x, y) || !is_f32_vector(weight, x.ne[0])) {
    return invalid_argument("rms_norm: needs f32 x and y of one shape and an f32 weight of the row length");
  }
  const float* w = static_cast<const float*>(weight.data);
  parallel_rows(pool, x.n_rows(), x.ne[0],
                [&](int64_t begin, int64_t end) { rms_norm_rows(isa, x, w, eps, y, begin, end); });
  return {};
}

Status add_rms_norm(ThreadPool& pool, Isa isa, const TensorView& x, const TensorView& delta,
                    const TensorView& weight, float eps, const TensorView& y) {
  if (!is_f32_rows(x) || !is_f32_rows(delta) || !is_f32_rows(y) || !same_shape(x, delta) || !same_shape(x, y) ||
      !is_f32_vector(weight, x.ne[0])) {
    return invalid_argument(
        "add_rms_norm: needs f32 x, delta and y of one shape and an f32 weight of the row length");
  }
  if (y.data == x.data || y.data == delta.data) return invalid_argument("add_rms_norm: y must not alias x or delta");
  const float* w = static_cast<const float*>(weight.data);
  const int64_t n = x.ne[0];
  // One job where add and rms_norm are two: the rows split as rms_norm splits them.
  parallel_rows(pool, x.n_rows(), n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = row_at<float>(x, r);
      const float* d = row_at<const float>(delta, r);
      for (int64_t i = 0; i < n; ++i) row[i] = row[i] + d[i];
    }
    rms_norm_rows(isa, x, w, eps, y, begin, end);
  });
  return {};
}

Status layer_norm(ThreadPool& pool, const TensorView& x, const TensorView& weight,
                  const TensorView& bias, float eps, const TensorView& y) {
  if (!is_f32_rows(x) || !is_f32_rows(y) || !same_shape(x, y) || !is_f32_vector(weight, x.ne[0]) ||
      !is_f32_vector(bias, x.ne[0])) {
    return invalid_argument("layer_norm: needs f32 x and y of one shape and f32 weight and bias of the row length");
  }
  const int64_t n = x.ne[0];
  const float* w = static_cast<const float*>(weight.data);
  const float* b = static_cast<const float*>(bias.data);
  parallel_rows(pool, x.n_rows(), n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* in = row_at<const float>(x, r);
      float* out = row_at<float>(y, r);
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(in[i]);
      const float mean = static_cast<float>(sum) / static_cast<float>(n);
      for (int64_t i = 0; i < n; ++i) out[i] = in[i] - mean;  // y may alias x
      const double sum_sq = sum_of_squares(out, n);
      const float variance = static_cast<float>(sum_sq / static_cast<double>(n));
      const float scale = 1.0f / std::sqrt(variance + eps);
      for (int64_t i = 0; i < n; ++i) out[i] = out[i] * scale * w[i] + b[i];
    }
  });
  return {};
}

}  // namespace pagoda::backend::cpu
