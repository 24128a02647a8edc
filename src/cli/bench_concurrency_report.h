#pragma once
// What `pagoda bench --concurrency` measured, and how it is printed: a few lines of
// text, or one JSON object.

#include <cstdint>
#include <string>
#include <vector>

#include "cli/bench_concurrency.h"
#include "engine/engine_core.h"

namespace pagoda::cli {

// One request's clock, in seconds since the run started.
struct RequestTiming {
  double submitted = 0.0;
  double first_token = -1.0;  // its first output with a token
  double finished = -1.0;     // its last output
  int32_t n_prompt_tokens = 0;
  int32_t n_cached_prompt_tokens = 0;
  int32_t n_tokens = 0;  // generated
  std::string error;     // set when it did not finish normally

  double ttft() const { return first_token - submitted; }
  double e2e() const { return finished - submitted; }
};

struct ConcurrencyRun {
  ConcurrencyBenchArgs args;  // num_requests and max_running resolved
  std::string model;          // "SmolLM2-135M-Instruct.Q4_1.gguf (llama 135M Q4_1)"
  std::string backend;        // Backend::name()
  int32_t n_kv_blocks = 0;
  int32_t block_size = 0;
  double seconds = 0.0;                 // first submission to last finish
  std::vector<RequestTiming> requests;  // in submission order
  engine::EngineStats engine;           // at the end of the run
  std::string speculative_method = "none";  // speculative_method_name()
};

struct Percentiles {
  double mean = 0.0, p50 = 0.0, p90 = 0.0, p99 = 0.0;
};
// Of `values` (any order; empty gives zeros), percentiles interpolated linearly
// between the nearest ranks.
Percentiles percentiles(std::vector<double> values);

void print_concurrency_report(const ConcurrencyRun& run, bool json);

}  // namespace pagoda::cli
