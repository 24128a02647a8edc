#include "engine/step_cost.h"

#include <algorithm>
#include <cstddef>

namespace pagoda::engine {
namespace {

constexpr double kFasterWeight = 0.5;  // of a pass faster than the average
constexpr double kSlowerWeight = 0.1;  // of a slower one

}  // namespace

StepCostModel::StepCostModel(int32_t max_rows, int64_t memory_steps)
    : measures_(static_cast<size_t>(std::max(max_rows, 1)) + 1), memory_steps_(memory_steps) {}

void StepCostModel::record(int32_t n_rows, double seconds) {
  ++passes_;
  if (n_rows <= 0 || static_cast<size_t>(n_rows) >= measures_.size() || !(seconds >= 0.0)) return;
  Measure& m = measures_[static_cast<size_t>(n_rows)];
  if (!known(static_cast<size_t>(n_rows))) {
    m.seconds = seconds;
    m.count = 0;
  } else {
    const double weight = seconds < m.seconds ? kFasterWeight : kSlowerWeight;
    m.seconds = (1.0 - weight) * m.seconds + weight * seconds;
  }
  m.pass = passes_;
  ++m.count;
}

bool StepCostModel::known(size_t n_rows) const {
  const Measure& m = measures_[n_rows];
  const int64_t memory = m.count >= 2 ? memory_steps_ : std::max<int64_t>(memory_steps_ / 8, 4);
  return m.seconds >= 0.0 && passes_ - m.pass <= memory;
}

bool StepCostModel::measured(int32_t n_rows) const {
  return n_rows > 0 && static_cast<size_t>(n_rows) < measures_.size() && known(static_cast<size_t>(n_rows));
}

double StepCostModel::predict(int32_t n_rows) const {
  const auto size = static_cast<std::ptrdiff_t>(measures_.size());
  const std::ptrdiff_t n = std::clamp<std::ptrdiff_t>(n_rows, 1, size - 1);
  const auto at = [&](std::ptrdiff_t i) { return measures_[static_cast<size_t>(i)].seconds; };
  if (known(static_cast<size_t>(n))) return at(n);
  std::ptrdiff_t below = n - 1, above = n + 1;
  while (below >= 1 && !known(static_cast<size_t>(below))) --below;
  while (above < size && !known(static_cast<size_t>(above))) ++above;
  const bool has_below = below >= 1, has_above = above < size;
  if (has_below && has_above) {
    return at(below) + (at(above) - at(below)) * static_cast<double>(n - below) / static_cast<double>(above - below);
  }
  if (has_below) return at(below);
  if (has_above) return at(above);
  return 0.0;
}

bool StepCostModel::any_measured() const {
  for (size_t n = 1; n < measures_.size(); ++n) {
    if (known(n)) return true;
  }
  return false;
}

void StepCosts::record(const SchedulerOutput& plan, double seconds) {
  every_.record(plan.n_tokens, seconds);
  if (plan.n_tokens > 0 && plan.rows_with_logits() == plan.n_tokens) decoding_.record(plan.n_tokens, seconds);
}

}  // namespace pagoda::engine
