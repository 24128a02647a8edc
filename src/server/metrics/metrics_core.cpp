#include "server/metrics/metrics_core.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace pagoda::server {

void Counter::inc(double v) {
  if (!(v > 0.0)) return;  // also false for NaN
  value_.fetch_add(v, std::memory_order_relaxed);
}

void Gauge::add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }

Status check_bucket_bounds(const std::vector<double>& bounds) {
  if (bounds.empty()) return invalid_argument("histogram: no bucket bounds");
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return invalid_argument("histogram: bucket bound " + std::to_string(i) + " is not finite");
    }
    if (i > 0 && !(bounds[i - 1] < bounds[i])) {
      return invalid_argument("histogram: bucket bounds are not strictly increasing at " +
                              std::to_string(i));
    }
  }
  return Status::ok_status();
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  std::erase_if(bounds_, [](double b) { return !std::isfinite(b); });
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::observe(double v) {
  if (std::isnan(v)) return;
  // The first bound >= v: `le` is inclusive. Past the last bound: the +Inf bucket.
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot snap;
  snap.bounds = bounds_;
  snap.cumulative.resize(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    snap.cumulative[i] = running;
  }
  snap.sum = sum_.load(std::memory_order_relaxed);
  return snap;
}

}  // namespace pagoda::server
