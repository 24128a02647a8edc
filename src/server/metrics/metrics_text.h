#pragma once
// The Prometheus text exposition format, version 0.0.4: what GET /metrics returns.
//
//   # HELP pagoda_requests_total Requests answered, by endpoint and HTTP status.
//   # TYPE pagoda_requests_total counter
//   pagoda_requests_total{endpoint="/v1/completions",status="200"} 12
//
// Each family is one HELP line, one TYPE line, then its samples; a histogram's samples
// are its cumulative `_bucket{le="..."}` counts (the last le="+Inf"), `_sum` and `_count`.

#include <string>
#include <string_view>
#include <vector>

#include "server/metrics/metrics_core.h"

namespace pagoda::server {

inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

enum class MetricType { kCounter, kGauge, kHistogram };

// A number as Prometheus parses it: integers without a fraction or exponent ("12"),
// others in the shortest form that reads back to the same double ("0.25", "1e-05"),
// and "+Inf", "-Inf", "NaN".
std::string format_metric_value(double v);
// A label value between the quotes: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);
// HELP text: backslash and newline escaped.
std::string escape_help_text(std::string_view text);
// [a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]* (names starting "__" are reserved).
bool is_valid_metric_name(std::string_view name);
bool is_valid_label_name(std::string_view name);

class ExpositionWriter {
 public:
  // The HELP and TYPE lines that start a family.
  void begin_family(std::string_view name, std::string_view help, MetricType type);
  // One sample line. label_names and label_values pair up (the shorter one decides).
  void sample(std::string_view name, const std::vector<std::string>& label_names,
              const LabelValues& label_values, double value);
  // A family with one unlabelled sample.
  void single(std::string_view name, std::string_view help, MetricType type, double value);
  // A histogram series: its buckets, _sum and _count under `name`'s family.
  void histogram(std::string_view name, const std::vector<std::string>& label_names,
                 const LabelValues& label_values, const HistogramSnapshot& snapshot);

  template <typename Metric>
  void counters(std::string_view name, std::string_view help, const Family<Metric>& family) {
    begin_family(name, help, MetricType::kCounter);
    family.for_each([&](const LabelValues& values, const Metric& metric) {
      sample(name, family.label_names(), values, metric.value());
    });
  }

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void labels(const std::vector<std::string>& names, const LabelValues& values,
              std::string_view extra_name = {}, std::string_view extra_value = {});

  std::string out_;
};

}  // namespace pagoda::server
