#include "loadgen/arrival_schedule.h"

#include <cmath>
#include <random>
#include <string>

namespace pagoda::loadgen {

double unit_exponential(uint64_t random_word) {
  // (k + 1) / 2^53 for k in [0, 2^53): never 0, so the logarithm stays finite.
  const double u = static_cast<double>((random_word >> 11) + 1) * 0x1p-53;
  return -std::log(u);
}

Expected<std::vector<double>> poisson_arrival_offsets(size_t n, double requests_per_second,
                                                      uint64_t seed) {
  if (!(requests_per_second > 0.0))  // also rejects NaN
    return invalid_argument("request rate must be above 0 (or inf), got " +
                            std::to_string(requests_per_second));
  std::vector<double> offsets(n, 0.0);
  if (std::isinf(requests_per_second)) return offsets;
  std::mt19937_64 generator(seed);
  double now = 0.0;
  for (size_t i = 1; i < n; ++i) {
    now += unit_exponential(generator()) / requests_per_second;
    offsets[i] = now;
  }
  return offsets;
}

}  // namespace pagoda::loadgen
