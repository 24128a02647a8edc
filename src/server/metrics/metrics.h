#pragma once
// The server's metric set, rendered by GET /metrics in the Prometheus text format
// (metrics_text.h). Names carry the `pagoda_` prefix and their unit (_seconds, _total).
//
// Recorded by the I/O threads as requests end (thread-safe, lock-free but for the first
// use of a label set):
//   pagoda_requests_total{endpoint,status}          counter  HTTP requests answered
//   pagoda_request_finished_total{finish_reason}    counter  generations ended (stop, length, abort)
//   pagoda_prompt_tokens_total                      counter
//   pagoda_generation_tokens_total                  counter
//   pagoda_time_to_first_token_seconds              histogram
//   pagoda_time_per_output_token_seconds            histogram (after the first token)
//   pagoda_e2e_request_latency_seconds              histogram
//   pagoda_request_queue_time_seconds               histogram (waiting before the first step)
// Read from the engine's stats at render time:
//   pagoda_num_requests_running / _waiting          gauges
//   pagoda_kv_cache_usage_ratio                     gauge in [0, 1]
//   pagoda_kv_cache_blocks                          gauge
//   pagoda_prefix_cache_queries_total / _hits_total counters, in prompt tokens (as vLLM)
//   pagoda_num_preemptions_total                    counter
// And the process: process_resident_memory_bytes, process_virtual_memory_bytes,
// process_cpu_seconds_total.
//
// Histogram buckets are vLLM's, so dashboards built for it read ours the same way.

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_core.h"
#include "server/metrics/metrics_core.h"
#include "server/metrics/metrics_text.h"

namespace pagoda::server {

// Bucket upper bounds, seconds.
const std::vector<double>& ttft_buckets();
const std::vector<double>& tpot_buckets();
const std::vector<double>& request_latency_buckets();  // e2e and queue time

class ServerMetrics {
 public:
  ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // One answered HTTP request. `endpoint` should be the route ("/v1/completions"), not
  // the raw path (which a client chooses); label sets past a bound count as "other".
  void record_request(std::string_view endpoint, int status);
  // One generation ended: "stop", "length" or "abort".
  void record_finish(std::string_view finish_reason);
  // Tokens of a finished request (negative counts are ignored).
  void record_tokens(int64_t prompt, int64_t generated);
  void observe_ttft(double seconds);
  void observe_tpot(double seconds);
  void observe_e2e(double seconds);
  void observe_queue_time(double seconds);

  // How long loading the model took (weights, tokenizer, backend), set once at start.
  void set_model_load_seconds(double seconds) {
    model_load_seconds_.store(seconds, std::memory_order_relaxed);
  }

  // record_request() calls so far.
  int64_t requests_served() const { return requests_served_.load(std::memory_order_relaxed); }

  // The whole exposition, with `stats` for the engine's gauges and counters.
  std::string render(const engine::EngineStats& stats) const;

 private:
  void render_engine(ExpositionWriter& out, const engine::EngineStats& stats) const;
  static void render_process(ExpositionWriter& out);

  Family<Counter> requests_;
  Family<Counter> finished_;
  Counter prompt_tokens_;
  Counter generation_tokens_;
  Histogram ttft_;
  Histogram tpot_;
  Histogram e2e_;
  Histogram queue_time_;
  std::atomic<int64_t> requests_served_{0};
  std::atomic<double> model_load_seconds_{0.0};
};

}  // namespace pagoda::server
