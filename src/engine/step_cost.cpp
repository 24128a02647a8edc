#include "engine/step_cost.h"

#include <algorithm>
#include <cstddef>

namespace pagoda::engine {
namespace {

constexpr double kNewestWeight = 0.2;  // of the newest pass in a row count's average

}  // namespace

StepCostModel::StepCostModel(int32_t max_rows) : seconds_(static_cast<size_t>(std::max(max_rows, 1)) + 1, -1.0) {}

void StepCostModel::record(int32_t n_rows, double seconds) {
  if (n_rows <= 0 || static_cast<size_t>(n_rows) >= seconds_.size() || !(seconds >= 0.0)) return;
  double& average = seconds_[static_cast<size_t>(n_rows)];
  average = average < 0.0 ? seconds : (1.0 - kNewestWeight) * average + kNewestWeight * seconds;
}

double StepCostModel::predict(int32_t n_rows) const {
  const auto n = static_cast<std::ptrdiff_t>(std::clamp<int64_t>(n_rows, 1, static_cast<int64_t>(seconds_.size()) - 1));
  if (seconds_[static_cast<size_t>(n)] >= 0.0) return seconds_[static_cast<size_t>(n)];
  std::ptrdiff_t below = n - 1, above = n + 1;
  while (below >= 1 && seconds_[static_cast<size_t>(below)] < 0.0) --below;
  while (above < static_cast<std::ptrdiff_t>(seconds_.size()) && seconds_[static_cast<size_t>(above)] < 0.0) ++above;
  const bool has_below = below >= 1, has_above = above < static_cast<std::ptrdiff_t>(seconds_.size());
  if (has_below && has_above) {
    const double low = seconds_[static_cast<size_t>(below)], high = seconds_[static_cast<size_t>(above)];
    return low + (high - low) * static_cast<double>(n - below) / static_cast<double>(above - below);
  }
  if (has_below) return seconds_[static_cast<size_t>(below)];
  if (has_above) return seconds_[static_cast<size_t>(above)];
  return 0.0;
}

}  // namespace pagoda::engine
