#include "loadgen/benchmark_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace pagoda::loadgen {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kWidth = 50;  // of the table's rules

// "----Title----" centered in kWidth columns.
std::string rule(const std::string& title, char fill) {
  const int padding = kWidth - static_cast<int>(title.size());
  const int left = padding > 0 ? padding / 2 : 0;
  const int right = padding > 0 ? padding - left : 0;
  return std::string(static_cast<size_t>(left), fill) + title +
         std::string(static_cast<size_t>(right), fill) + "\n";
}

// "label:" padded to 40 columns, then the value.
std::string row(const std::string& label, const std::string& value) {
  std::string line = label;
  if (line.size() < 40) line.resize(40, ' ');
  return line + " " + value + "\n";
}

std::string fixed(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string latency_section(const std::string& title, const std::string& name, const Summary& s) {
  std::string out = rule(title, '-');
  auto value = [&](double v) { return s.count > 0 ? fixed(v) : std::string("-"); };
  out += row("Mean " + name + " (ms):", value(s.mean));
  out += row("Median " + name + " (ms):", value(s.p50));
  out += row("P90 " + name + " (ms):", value(s.p90));
  out += row("P99 " + name + " (ms):", value(s.p99));
  out += row("Std " + name + " (ms):", value(s.std));
  return out;
}

std::string input_token_source(const BenchmarkMetrics& m, const ReportSettings& settings) {
  if (m.successful_requests == 0) return token_count_source_name(settings.prompt_token_source);
  if (m.prompt_tokens_from_usage == m.successful_requests) return "usage";
  if (m.prompt_tokens_from_usage == 0) return token_count_source_name(settings.prompt_token_source);
  return "mixed";
}

std::string output_token_source(const BenchmarkMetrics& m) {
  if (m.output_tokens_from_usage == m.successful_requests) return "usage";
  return m.output_tokens_from_usage == 0 ? "chunks" : "mixed";
}

std::string describe_source(const std::string& source) {
  if (source == "usage") return "server usage";
  if (source == "tokenize") return "/tokenize before the run";
  if (source == "estimate") return "estimated";
  if (source == "chunks") return "streamed chunks counted";
  return "server usage for some, estimated for others";
}

Json summary_json(const Summary& s) {
  auto number = [&](double v) { return s.count > 0 ? Json(v) : Json(nullptr); };
  return Json{{"count", s.count},     {"mean", number(s.mean)}, {"p50", number(s.p50)},
              {"p90", number(s.p90)}, {"p99", number(s.p99)},   {"std", number(s.std)}};
}

}  // namespace

std::string text_report(const BenchmarkMetrics& m, const ReportSettings& settings) {
  std::string out = rule(" Serving Benchmark Result ", '=');
  out += row("Server:", settings.url + settings.endpoint);
  out += row("Model:", settings.model);
  out += row("Prompts:", settings.prompts);
  out += row("Maximum request concurrency:",
             settings.concurrency > 0 ? std::to_string(settings.concurrency) : "unlimited");
  out +=
      row("Request rate (req/s):",
          std::isinf(settings.request_rate) ? "inf (all at once)" : fixed(settings.request_rate));
  out += row("Successful requests:", std::to_string(m.successful_requests));
  out += row("Failed requests:", std::to_string(m.failed_requests));
  out += row("Benchmark duration (s):", fixed(m.duration_s));
  out += row("Total input tokens:", std::to_string(m.total_input_tokens));
  out += row("Total generated tokens:", std::to_string(m.total_output_tokens));
  out += row("Request throughput (req/s):", fixed(m.request_throughput));
  out += row("Output token throughput (tok/s):", fixed(m.output_token_throughput));
  out += row("Total Token throughput (tok/s):", fixed(m.total_token_throughput));
  out += row("Input tokens from:", describe_source(input_token_source(m, settings)));
  out += row("Output tokens from:", describe_source(output_token_source(m)));
  out += row("Connections opened:", std::to_string(settings.connections_opened));
  out += latency_section("Time to First Token", "TTFT", m.ttft_ms);
  out += latency_section("Time per Output Token (excl. 1st token)", "TPOT", m.tpot_ms);
  out += latency_section("Inter-token Latency", "ITL", m.itl_ms);
  out += latency_section("End-to-end Latency", "E2EL", m.e2e_ms);
  out += std::string(kWidth, '=') + "\n";
  if (m.failed_requests > 0) out += "First error: " + m.first_error + "\n";
  return out;
}

std::string json_report(const BenchmarkMetrics& m, const ReportSettings& settings) {
  Json out{
      {"successful_requests", m.successful_requests},
      {"failed_requests", m.failed_requests},
      {"first_error", m.failed_requests > 0 ? Json(m.first_error) : Json(nullptr)},
      {"duration_s", m.duration_s},
      {"total_input_tokens", m.total_input_tokens},
      {"total_output_tokens", m.total_output_tokens},
      {"request_throughput", m.request_throughput},
      {"output_token_throughput", m.output_token_throughput},
      {"total_token_throughput", m.total_token_throughput},
      {"ttft_ms", summary_json(m.ttft_ms)},
      {"tpot_ms", summary_json(m.tpot_ms)},
      {"itl_ms", summary_json(m.itl_ms)},
      {"e2e_ms", summary_json(m.e2e_ms)},
      {"input_tokens_source", input_token_source(m, settings)},
      {"output_tokens_source", output_token_source(m)},
      {"url", settings.url},
      {"endpoint", settings.endpoint},
      {"model", settings.model},
      {"prompts", settings.prompts},
      {"num_prompts", settings.num_prompts},
      {"concurrency", settings.concurrency > 0 ? Json(settings.concurrency) : Json(nullptr)},
      {"request_rate",
       std::isinf(settings.request_rate) ? Json(nullptr) : Json(settings.request_rate)},
      {"seed", settings.seed},
      {"connections_opened", settings.connections_opened},
  };
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace pagoda::loadgen
