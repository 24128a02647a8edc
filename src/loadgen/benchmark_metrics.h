#pragma once
// The figures of a run, defined as vLLM's serving benchmark defines them:
//   request throughput       successful requests / duration
//   output token throughput  output tokens of successful requests / duration
//   total token throughput   (their prompt + output tokens) / duration
//   TTFT                     send -> first chunk with text, per request
//   TPOT                     (e2e - TTFT) / (output tokens - 1), per request with > 1 token
//   ITL                      every gap between chunks with text, over all requests
//   E2E                      send -> end of the stream, per request
// Latencies are summarized in milliseconds; failed requests count in none of them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "loadgen/request_record.h"
#include "loadgen/statistics.h"

namespace pagoda::loadgen {

struct BenchmarkMetrics {
  size_t successful_requests = 0;
  size_t failed_requests = 0;
  std::string first_error;  // of the first failed request in prompt order; "" if none
  double duration_s = 0.0;
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double request_throughput = 0.0;       // requests/s
  double output_token_throughput = 0.0;  // tokens/s
  double total_token_throughput = 0.0;   // tokens/s
  Summary ttft_ms, tpot_ms, itl_ms, e2e_ms;
  // How many successful requests had their token counts from the server's usage.
  size_t prompt_tokens_from_usage = 0;
  size_t output_tokens_from_usage = 0;
};

BenchmarkMetrics compute_metrics(std::span<const RequestRecord> records, double duration_s);

}  // namespace pagoda::loadgen
