#include "server/metrics/metrics.h"

#include <string>

#include "server/metrics/metrics_process.h"

namespace pagoda::server {
namespace {

std::unique_ptr<Counter> make_counter() { return std::make_unique<Counter>(); }

void histogram_family(ExpositionWriter& out, std::string_view name, std::string_view help,
                      const Histogram& histogram) {
  out.begin_family(name, help, MetricType::kHistogram);
  out.histogram(name, {}, {}, histogram.snapshot());
}

}  // namespace

const std::vector<double>& ttft_buckets() {
  static const std::vector<double> buckets{0.001, 0.005, 0.01, 0.02, 0.04,  0.06,  0.08,  0.1,
                                           0.25,  0.5,   0.75, 1.0,  2.5,   5.0,   7.5,   10.0,
                                           20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
  return buckets;
}

const std::vector<double>& tpot_buckets() {
  static const std::vector<double> buckets{0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,
                                           0.3,  0.4,   0.5,  0.75,  1.0,  2.5,  5.0,
                                           7.5,  10.0,  20.0, 40.0,  80.0};
  return buckets;
}

const std::vector<double>& request_latency_buckets() {
  static const std::vector<double> buckets{0.3,   0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                           5.0,   10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                           60.0,  120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return buckets;
}

ServerMetrics::ServerMetrics()
    : requests_({"endpoint", "status"}, make_counter),
      finished_({"finish_reason"}, make_counter, 16),
      ttft_(ttft_buckets()),
      tpot_(tpot_buckets()),
      e2e_(request_latency_buckets()),
      queue_time_(request_latency_buckets()) {}

void ServerMetrics::record_request(std::string_view endpoint, int status) {
  requests_.with({std::string(endpoint), std::to_string(status)}).inc();
  requests_served_.fetch_add(1, std::memory_order_relaxed);
}

void ServerMetrics::record_finish(std::string_view finish_reason) {
  finished_.with({std::string(finish_reason)}).inc();
}

void ServerMetrics::record_tokens(int64_t prompt, int64_t generated) {
  prompt_tokens_.inc(static_cast<double>(prompt));
  generation_tokens_.inc(static_cast<double>(generated));
}

void ServerMetrics::observe_ttft(double seconds) { ttft_.observe(seconds); }
void ServerMetrics::observe_tpot(double seconds) { tpot_.observe(seconds); }
void ServerMetrics::observe_e2e(double seconds) { e2e_.observe(seconds); }
void ServerMetrics::observe_queue_time(double seconds) { queue_time_.observe(seconds); }

std::string ServerMetrics::render(const engine::EngineStats& stats) const {
  ExpositionWriter out;
  out.counters("pagoda_requests_total", "HTTP requests answered, by endpoint and status code.",
               requests_);
  out.counters("pagoda_request_finished_total",
               "Generations ended, by finish reason (stop, length, abort).", finished_);
  out.single("pagoda_prompt_tokens_total", "Prompt tokens of finished requests.",
             MetricType::kCounter, prompt_tokens_.value());
  out.single("pagoda_generation_tokens_total", "Tokens generated for finished requests.",
             MetricType::kCounter, generation_tokens_.value());
  histogram_family(out, "pagoda_time_to_first_token_seconds",
                   "Time from a request's arrival to its first generated token.", ttft_);
  histogram_family(out, "pagoda_time_per_output_token_seconds",
                   "Mean time between generated tokens of a request, after the first.", tpot_);
  histogram_family(out, "pagoda_e2e_request_latency_seconds",
                   "Time from a request's arrival to its last byte.", e2e_);
  histogram_family(out, "pagoda_request_queue_time_seconds",
                   "Time a request waited before the engine first scheduled it.", queue_time_);
  render_engine(out, stats);
  render_process(out);
  return out.take();
}

void ServerMetrics::render_engine(ExpositionWriter& out, const engine::EngineStats& stats) const {
  out.single("pagoda_num_requests_running", "Requests holding KV cache and being computed.",
             MetricType::kGauge, stats.n_running);
  out.single("pagoda_num_requests_waiting", "Requests queued for the engine.", MetricType::kGauge,
             stats.n_waiting);
  out.single("pagoda_kv_cache_usage_ratio", "Share of KV cache blocks held by requests (0 to 1).",
             MetricType::kGauge, stats.kv_usage);
  out.single("pagoda_kv_cache_blocks", "KV cache blocks allocated at start.", MetricType::kGauge,
             stats.n_kv_blocks);
  out.single("pagoda_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
             MetricType::kCounter, static_cast<double>(stats.prefix_cache.queried_tokens));
  out.single("pagoda_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
             MetricType::kCounter, static_cast<double>(stats.prefix_cache.hit_tokens));
  out.single("pagoda_kv_cache_cached_blocks",
             "KV cache blocks holding a prefix-cache entry (in use or evictable).",
             MetricType::kGauge, stats.n_cached_kv_blocks);
  out.single("pagoda_prefix_cache_evictions_total",
             "Cached prefix blocks reused for other tokens (their entry dropped).",
             MetricType::kCounter, static_cast<double>(stats.n_kv_evictions));
  out.single("pagoda_model_load_seconds", "Seconds loading the model took at start.",
             MetricType::kGauge, model_load_seconds_.load(std::memory_order_relaxed));
  out.single("pagoda_num_preemptions_total",
             "Running requests preempted (KV blocks freed, recomputed later).",
             MetricType::kCounter, static_cast<double>(stats.scheduler.n_preemptions));
  // Speculative decoding (zero when the server does not speculate).
  const engine::SchedulerStats& s = stats.scheduler;
  out.single("pagoda_spec_decode_num_draft_tokens_total", "Proposed tokens verified by the model.",
             MetricType::kCounter, static_cast<double>(s.n_draft_tokens));
  out.single("pagoda_spec_decode_num_accepted_tokens_total",
             "Proposed tokens the model's own choices agreed with (kept).", MetricType::kCounter,
             static_cast<double>(s.n_accepted_draft_tokens));
  out.single("pagoda_spec_decode_num_verifying_steps_total",
             "Request-steps that verified at least one proposal.", MetricType::kCounter,
             static_cast<double>(s.n_speculative_steps));
  out.single("pagoda_spec_decode_acceptance_ratio",
             "Kept share of the proposals verified since start (0 to 1).", MetricType::kGauge,
             s.acceptance_rate());
  out.single("pagoda_spec_decode_mean_accepted_length",
             "Proposals kept per verifying request-step, since start.", MetricType::kGauge,
             s.mean_accepted_length());
}

void ServerMetrics::render_process(ExpositionWriter& out) {
  if (const std::optional<ProcessMemory> memory = read_process_memory()) {
    out.single("process_resident_memory_bytes", "Resident memory size in bytes.",
               MetricType::kGauge, static_cast<double>(memory->resident_bytes));
    out.single("process_virtual_memory_bytes", "Virtual memory size in bytes.",
               MetricType::kGauge, static_cast<double>(memory->virtual_bytes));
  }
  out.single("process_cpu_seconds_total", "User and system CPU time spent, in seconds.",
             MetricType::kCounter, process_cpu_seconds());
}

}  // namespace pagoda::server
