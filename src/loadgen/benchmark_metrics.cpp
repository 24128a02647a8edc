#include "loadgen/benchmark_metrics.h"

#include <vector>

namespace pagoda::loadgen {

BenchmarkMetrics compute_metrics(std::span<const RequestRecord> records, double duration_s) {
  BenchmarkMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;  // milliseconds
  for (const RequestRecord& r : records) {
    if (!r.success) {
      if (m.failed_requests++ == 0) m.first_error = r.error;
      continue;
    }
    ++m.successful_requests;
    m.total_input_tokens += r.prompt_tokens;
    m.total_output_tokens += r.output_tokens;
    m.prompt_tokens_from_usage += r.prompt_tokens_from_usage ? 1 : 0;
    m.output_tokens_from_usage += r.output_tokens_from_usage ? 1 : 0;
    ttft.push_back(r.ttft_s * 1e3);
    e2e.push_back(r.e2e_s * 1e3);
    if (r.output_tokens > 1) tpot.push_back((r.e2e_s - r.ttft_s) * 1e3 / (r.output_tokens - 1));
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
  }
  if (duration_s > 0.0) {
    m.request_throughput = static_cast<double>(m.successful_requests) / duration_s;
    m.output_token_throughput = static_cast<double>(m.total_output_tokens) / duration_s;
    m.total_token_throughput =
        static_cast<double>(m.total_input_tokens + m.total_output_tokens) / duration_s;
  }
  m.ttft_ms = summarize(std::move(ttft));
  m.tpot_ms = summarize(std::move(tpot));
  m.itl_ms = summarize(std::move(itl));
  m.e2e_ms = summarize(std::move(e2e));
  return m;
}

}  // namespace pagoda::loadgen
