#pragma once
// Summary statistics of a latency sample, computed as numpy computes them (so the
// numbers line up with vLLM's serving benchmark): the mean, the population standard
// deviation (ddof = 0), and percentiles interpolated linearly between the closest
// ranks (numpy's default "linear" method).

#include <cstddef>
#include <span>
#include <vector>

namespace pagoda::loadgen {

struct Summary {
  size_t count = 0;  // 0: the sample was empty and every other field is 0
  double mean = 0.0;
  double std = 0.0;  // population standard deviation
  double p50 = 0.0;  // the median
  double p90 = 0.0;
  double p99 = 0.0;
};

// The `q`-th percentile (0..100) of values already sorted ascending; 0 when empty.
double percentile_of_sorted(std::span<const double> sorted, double q);

// Summary of `values`, in any order.
Summary summarize(std::vector<double> values);

}  // namespace pagoda::loadgen
