#pragma once
// Prometheus metric primitives: Counter, Gauge, Histogram, and labelled families of them.
//
// Recording is lock-free (atomics) so I/O threads can record on every request while
// another thread renders /metrics. A histogram keeps one count per bucket (not
// cumulative) and derives the cumulative `le` counts and `_count` from one snapshot of
// those at render time, so what it renders is always self-consistent (the `+Inf`
// bucket equals `_count`, bucket counts never decrease along `le`) even mid-update;
// `_sum` may trail the counts by the observations in flight.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pagoda::server {

// A metric's label values, in the order of its family's label names.
using LabelValues = std::vector<std::string>;

// A value that only goes up (resets only when the process restarts).
class Counter {
 public:
  // Adds v; negative and NaN amounts are ignored (a counter never decreases).
  void inc(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// What a histogram held at one moment.
struct HistogramSnapshot {
  std::vector<double> bounds;       // upper bounds, strictly increasing, finite
  std::vector<uint64_t> cumulative;  // [bounds.size() + 1]: observations <= each bound, then all
  double sum = 0.0;
  uint64_t count() const { return cumulative.empty() ? 0 : cumulative.back(); }
};

// Observations counted into fixed buckets; bucket i holds values v <= bounds[i] (and
// > bounds[i-1]), the last one everything above the largest bound.
class Histogram {
 public:
  // `bounds` must be finite and strictly increasing (see check_bucket_bounds); the
  // constructor sorts and deduplicates them and drops non-finite ones.
  explicit Histogram(std::vector<double> bounds);

  // NaN is ignored (it would poison _sum forever).
  void observe(double v);
  HistogramSnapshot snapshot() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // [bounds_.size() + 1], not cumulative
  std::atomic<double> sum_{0.0};
};

// Fails unless `bounds` is non-empty, finite and strictly increasing.
Status check_bucket_bounds(const std::vector<double>& bounds);

// The series of one metric name, one per distinct set of label values. Series are made
// on first use and live as long as the family (references stay valid). To keep the
// number of series bounded whatever callers pass as label values (e.g. a path from a
// client), past max_series every new label set is counted under the values "other".
template <typename Metric>
class Family {
 public:
  using Factory = std::function<std::unique_ptr<Metric>()>;

  Family(std::vector<std::string> label_names, Factory make, size_t max_series = 256)
      : label_names_(std::move(label_names)), make_(std::move(make)), max_series_(max_series) {}

  const std::vector<std::string>& label_names() const { return label_names_; }

  // The series for `values` (one per label name; missing ones read as "", extra ones
  // are dropped). Thread-safe.
  Metric& with(LabelValues values) {
    values.resize(label_names_.size());
    std::lock_guard lock(mutex_);
    auto it = series_.find(values);
    if (it != series_.end()) return *it->second;
    if (series_.size() >= max_series_) values.assign(label_names_.size(), "other");
    auto& slot = series_[std::move(values)];
    if (!slot) slot = make_();
    return *slot;
  }

  // Calls fn(values, metric) for every series, in label order. Thread-safe; `fn` must
  // not call with() on this family.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    std::lock_guard lock(mutex_);
    for (const auto& [values, metric] : series_) fn(values, *metric);
  }

 private:
  std::vector<std::string> label_names_;
  Factory make_;
  size_t max_series_;
  mutable std::mutex mutex_;
  std::map<LabelValues, std::unique_ptr<Metric>> series_;
};

}  // namespace pagoda::server
