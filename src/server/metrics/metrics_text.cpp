#include "server/metrics/metrics_text.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

namespace pagoda::server {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string format_metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Shortest round-trip form; integral values come out without a fraction ("12"), very
  // large or small ones with an exponent ("1e+20", "1e-05"), all of which Go's
  // strconv.ParseFloat (Prometheus' parser) reads back exactly.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
  return std::string(buffer, result.ptr);
}

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

bool is_valid_metric_name(std::string_view name) {
  if (name.empty() || !(is_name_start(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!(is_name_start(c) || is_digit(c) || c == ':')) return false;
  }
  return true;
}

bool is_valid_label_name(std::string_view name) {
  if (name.empty() || !is_name_start(name[0]) || name.starts_with("__")) return false;
  for (char c : name) {
    if (!(is_name_start(c) || is_digit(c))) return false;
  }
  return true;
}

void ExpositionWriter::begin_family(std::string_view name, std::string_view help, MetricType type) {
  assert(is_valid_metric_name(name));
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help_text(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type_name(type);
  out_ += '\n';
}

void ExpositionWriter::labels(const std::vector<std::string>& names, const LabelValues& values,
                              std::string_view extra_name, std::string_view extra_value) {
  const size_t n = std::min(names.size(), values.size());
  if (n == 0 && extra_name.empty()) return;
  out_ += '{';
  for (size_t i = 0; i < n; ++i) {
    assert(is_valid_label_name(names[i]));
    if (i > 0) out_ += ',';
    out_ += names[i];
    out_ += "=\"";
    out_ += escape_label_value(values[i]);
    out_ += '"';
  }
  if (!extra_name.empty()) {
    if (n > 0) out_ += ',';
    out_ += extra_name;
    out_ += "=\"";
    out_ += extra_value;  // an le value: a formatted number, nothing to escape
    out_ += '"';
  }
  out_ += '}';
}

void ExpositionWriter::sample(std::string_view name, const std::vector<std::string>& label_names,
                              const LabelValues& label_values, double value) {
  out_ += name;
  labels(label_names, label_values);
  out_ += ' ';
  out_ += format_metric_value(value);
  out_ += '\n';
}

void ExpositionWriter::single(std::string_view name, std::string_view help, MetricType type,
                              double value) {
  begin_family(name, help, type);
  sample(name, {}, {}, value);
}

void ExpositionWriter::histogram(std::string_view name, const std::vector<std::string>& label_names,
                                 const LabelValues& label_values,
                                 const HistogramSnapshot& snapshot) {
  const std::string bucket_name = std::string(name) + "_bucket";
  for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    const std::string le =
        i < snapshot.bounds.size() ? format_metric_value(snapshot.bounds[i]) : "+Inf";
    out_ += bucket_name;
    labels(label_names, label_values, "le", le);
    out_ += ' ';
    out_ += std::to_string(snapshot.cumulative[i]);  // exact, whatever the count
    out_ += '\n';
  }
  sample(std::string(name) + "_sum", label_names, label_values, snapshot.sum);
  out_ += name;
  out_ += "_count";
  labels(label_names, label_values);
  out_ += ' ';
  out_ += std::to_string(snapshot.count());
  out_ += '\n';
}

}  // namespace pagoda::server
