#pragma once
// How a run is printed: a text table in the layout of vLLM's serving benchmark, or
// one JSON object with stable keys (for scripts):
//   successful_requests, failed_requests, first_error (null if none), duration_s,
//   total_input_tokens, total_output_tokens, request_throughput,
//   output_token_throughput, total_token_throughput,
//   ttft_ms, tpot_ms, itl_ms, e2e_ms: {count, mean, p50, p90, p99, std} (the numbers
//   null when count is 0), input_tokens_source ("usage" | "tokenize" | "estimate" |
//   "mixed"), output_tokens_source ("usage" | "chunks" | "mixed"), and the settings:
//   url, endpoint, model, prompts, num_prompts, concurrency (null: no cap),
//   request_rate (null: all at once), seed, connections_opened.

#include <cstddef>
#include <cstdint>
#include <string>

#include "loadgen/bench_prompt.h"
#include "loadgen/benchmark_metrics.h"

namespace pagoda::loadgen {

struct ReportSettings {
  std::string url;       // "http://127.0.0.1:8080"
  std::string endpoint;  // "/v1/completions"
  std::string model;
  std::string prompts;  // "synthetic: 128 prompt + 128 generated tokens", "dataset x.jsonl"
  size_t num_prompts = 0;
  size_t concurrency = 0;  // 0: no cap
  double request_rate = 0.0;
  uint64_t seed = 0;
  TokenCountSource prompt_token_source = TokenCountSource::kEstimate;  // before the run
  size_t connections_opened = 0;
};

std::string text_report(const BenchmarkMetrics& metrics, const ReportSettings& settings);
std::string json_report(const BenchmarkMetrics& metrics, const ReportSettings& settings);

}  // namespace pagoda::loadgen
