#pragma once
// The sums of squares of RMSNorm, in the reference CPU build's order: per row, double
// sum += double(float(x_i * x_i)), i ascending. That is a chain of dependent double
// additions (3-4 cycles each), so the vector form takes 8 rows at once, row r in lane r
// of two 4-double vectors: each row's additions stay in its order, bit for bit.

#include <cstdint>

namespace pagoda::backend::cpu {

inline constexpr int kSumRows = 8;  // rows per call of sums_of_squares_rows

namespace avx2 {
// sums[r] = the sum of squares of rows[r][0..n) for r < n_rows (1..kSumRows), in order.
void sums_of_squares_rows(const float* const* rows, int n_rows, int64_t n, double* sums);
}  // namespace avx2

}  // namespace pagoda::backend::cpu
