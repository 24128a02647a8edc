#include <immintrin.h>

#include "backend/cpu/ops/norms.h"

namespace pagoda::backend::cpu::avx2 {
namespace {

// The squares of values i..i+3 of 4 rows, value-major: out[k] lane r = row r's value i+k
// squared, as a double.
inline void squares4x4(const float* const* rows, int64_t i, __m256d out[4]) {
  __m128 v0 = _mm_loadu_ps(rows[0] + i), v1 = _mm_loadu_ps(rows[1] + i);
  __m128 v2 = _mm_loadu_ps(rows[2] + i), v3 = _mm_loadu_ps(rows[3] + i);
  v0 = _mm_mul_ps(v0, v0);
  v1 = _mm_mul_ps(v1, v1);
  v2 = _mm_mul_ps(v2, v2);
  v3 = _mm_mul_ps(v3, v3);
  _MM_TRANSPOSE4_PS(v0, v1, v2, v3);
  out[0] = _mm256_cvtps_pd(v0);
  out[1] = _mm256_cvtps_pd(v1);
  out[2] = _mm256_cvtps_pd(v2);
  out[3] = _mm256_cvtps_pd(v3);
}

}  // namespace

void sums_of_squares_rows(const float* const* rows, int n_rows, int64_t n, double* sums) {
  const float* r[kSumRows];
  for (int k = 0; k < kSumRows; ++k) r[k] = rows[k < n_rows ? k : 0];  // spare lanes repeat row 0
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();  // rows 0..3, 4..7
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d a[4], b[4];
    squares4x4(r, i, a);
    squares4x4(r + 4, i, b);
    for (int k = 0; k < 4; ++k) {
      low = _mm256_add_pd(low, a[k]);
      high = _mm256_add_pd(high, b[k]);
    }
  }
  alignas(32) double lanes[kSumRows];
  _mm256_store_pd(lanes, low);
  _mm256_store_pd(lanes + 4, high);
  for (int k = 0; k < n_rows; ++k) {
    double sum = lanes[k];
    for (int64_t j = i; j < n; ++j) sum += static_cast<double>(rows[k][j] * rows[k][j]);
    sums[k] = sum;
  }
}

}  // namespace pagoda::backend::cpu::avx2
