// Elementwise ops: add, add_bias, silu_mul (SwiGLU) and gelu.

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/ops/rows.h"
#include "backend/cpu/ops/silu.h"
#include "core/fp16.h"

namespace pagoda::backend::cpu {
namespace {

// gelu with the tanh approximation, in float, as the reference formulates it.
float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

// gelu of every half value, rounded to half: the reference CPU build looks gelu up in
// such a table (its GGML_GELU_FP16 default), so the input is rounded to half first.
const std::array<uint16_t, 65536>& gelu_table() {
  static const std::array<uint16_t, 65536> table = [] {
    std::array<uint16_t, 65536> t{};
    for (uint32_t i = 0; i < t.size(); ++i) {
      t[i] = f32_to_fp16(gelu_tanh(fp16_to_f32(static_cast<uint16_t>(i))));
    }
    return t;
  }();
  return table;
}

// A [n] vector of f32 or f16 (biases are stored either way).
bool is_vector(const TensorView& v, int64_t n) {
  return (v.type == DType::F32 || v.type == DType::F16) && v.ne[0] == n && v.n_rows() == 1;
}

float vector_at(const TensorView& v, int64_t i) {
  return v.type == DType::F32 ? static_cast<const float*>(v.data)[i]
                              : fp16_to_f32(static_cast<const uint16_t*>(v.data)[i]);
}

}  // namespace

bool same_shape(const TensorView& a, const TensorView& b) {
  return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

bool is_f32_rows(const TensorView& v) {
  return v.data != nullptr && v.type == DType::F32 && v.nb[0] == sizeof(float);
}

Status add(ThreadPool& pool, const TensorView& a, const TensorView& b, const TensorView& out) {
  if (!is_f32_rows(a) || !is_f32_rows(b) || !is_f32_rows(out) || !same_shape(a, b) ||
      !same_shape(a, out)) {
    return invalid_argument("add: needs f32 views of one shape");
  }
  const int64_t n = a.ne[0];
  parallel_rows(pool, a.n_rows(), n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = row_at<const float>(a, r);
      const float* y = row_at<const float>(b, r);
      float* z = row_at<float>(out, r);
      for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
    }
  });
  return {};
}

Status add_bias(ThreadPool& pool, const TensorView& y, const TensorView& bias) {
  if (!is_f32_rows(y) || !is_vector(bias, y.ne[0])) {
    return invalid_argument("add_bias: needs f32 rows and an f32/f16 bias of the row length");
  }
  const int64_t n = y.ne[0];
  parallel_rows(pool, y.n_rows(), n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* row = row_at<float>(y, r);
      if (bias.type == DType::F32) {
        const float* b = static_cast<const float*>(bias.data);
        for (int64_t i = 0; i < n; ++i) row[i] += b[i];
      } else {
        for (int64_t i = 0; i < n; ++i) row[i] += vector_at(bias, i);
      }
    }
  });
  return {};
}

Status silu_mul(ThreadPool& pool, Isa isa, const TensorView& gate, const TensorView& up,
                const TensorView& out) {
  if (!is_f32_rows(gate) || !is_f32_rows(up) || !is_f32_rows(out) || !same_shape(gate, up) ||
      !same_shape(gate, out)) {
    return invalid_argument("silu_mul: needs f32 views of one shape");
  }
  const int64_t n = gate.ne[0];
  parallel_rows(pool, gate.n_rows(), n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      silu_mul_row(isa, row_at<const float>(gate, r), row_at<const float>(up, r), row_at<float>(out, r), n);
    }
  });
  return {};
}

Status gelu(ThreadPool& pool, const TensorView& x) {
  if (!is_f32_rows(x)) return invalid_argument("gelu: needs an f32 view");
  const std::array<uint16_t, 65536>& table = gelu_table();
  const int64_t n = x.ne[0];
  parallel_rows(pool, x.n_rows(), n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float* v = row_at<float>(x, r);
      for (int64_t i = 0; i < n; ++i) {
        // Outside [-10, 10] gelu is 0 or x to within half precision.
        if (v[i] <= -10.0f) {
          v[i] = 0.0f;
        } else if (v[i] < 10.0f) {
          v[i] = fp16_to_f32(table[f32_to_fp16(v[i])]);
        }
      }
    }
  });
  return {};
}

}  // namespace pagoda::backend::cpu
