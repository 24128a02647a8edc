#include "loadgen/statistics.h"

#include <algorithm>
#include <cmath>

namespace pagoda::loadgen {

double percentile_of_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lower = static_cast<size_t>(std::floor(rank));
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  const double n = static_cast<double>(values.size());
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / n;
  double squares = 0.0;  // around the mean: stable where the spread is small
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(squares / n);
  s.p50 = percentile_of_sorted(values, 50.0);
  s.p90 = percentile_of_sorted(values, 90.0);
  s.p99 = percentile_of_sorted(values, 99.0);
  return s;
}

}  // namespace pagoda::loadgen
