#include "cli/bench_concurrency_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

namespace pagoda::cli {
namespace {

using Json = nlohmann::ordered_json;

// Latencies of the run in milliseconds, per kind.
struct Latencies {
  std::vector<double> ttft, e2e, tpot, ttft_later;
  int64_t output_tokens = 0;
  int64_t prompt_tokens = 0;
};

Latencies latencies_of(const ConcurrencyRun& run) {
  Latencies l;
  for (size_t i = 0; i < run.requests.size(); ++i) {
    const RequestTiming& r = run.requests[i];
    l.output_tokens += r.n_tokens;
    l.prompt_tokens += r.n_prompt_tokens;
    if (r.first_token < 0.0 || r.finished < 0.0) continue;
    l.ttft.push_back(r.ttft() * 1e3);
    l.e2e.push_back(r.e2e() * 1e3);
    if (r.n_tokens > 1) l.tpot.push_back((r.finished - r.first_token) * 1e3 / (r.n_tokens - 1));
    if (i > 0) l.ttft_later.push_back(r.ttft() * 1e3);
  }
  return l;
}

Json to_json(const Percentiles& p) {
  return Json{{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}};
}

Json engine_json(const ConcurrencyRun& run) {
  const engine::EngineStats& s = run.engine;
  return Json{{"steps", s.n_steps},
              {"batched_tokens", s.n_batched_tokens},
              {"prefilled_tokens", s.scheduler.n_prefilled_tokens},
              {"decoded_tokens", s.scheduler.n_decoded_tokens},
              {"prefix_cache_hit_tokens", s.prefix_cache.hit_tokens},
              {"preemptions", s.scheduler.n_preemptions},
              {"kv_blocks", run.n_kv_blocks},
              {"kv_block_size", run.block_size},
              {"schedule_seconds", s.timings.schedule},
              {"forward_seconds", s.timings.forward},
              {"decode_steps", s.n_decode_steps},
              {"decode_forward_seconds", s.timings.forward_decode},
              {"postprocess_seconds", s.timings.postprocess}};
}

// Proposals verified and kept, their share, and the kept ones per verifying step.
Json speculative_json(const ConcurrencyRun& run) {
  const engine::SchedulerStats& s = run.engine.scheduler;
  return Json{{"method", run.speculative_method},
              {"draft_seconds", run.engine.timings.draft},
              {"proposed_tokens", s.n_draft_tokens},
              {"accepted_tokens", s.n_accepted_draft_tokens},
              {"verifying_steps", s.n_speculative_steps},
              {"acceptance_rate", s.acceptance_rate()},
              {"mean_accepted_length", s.mean_accepted_length()}};
}

void print_json(const ConcurrencyRun& run, const Latencies& l) {
  const ConcurrencyBenchArgs& a = run.args;
  Json out{{"model", run.model},
           {"backend", run.backend},
           {"concurrency", a.concurrency},
           {"requests", static_cast<int64_t>(run.requests.size())},
           {"prompt_len", a.prompt_len},
           {"shared_prefix_len", a.shared_prefix_len},
           {"gen_len", a.gen_len},
           {"temperature", a.temperature},
           {"top_k", a.top_k},
           {"top_p", a.top_p},
           {"min_p", a.min_p},
           {"host_sampling", a.host_sampling},
           {"max_batched_tokens", a.max_batched_tokens},
           {"max_running", a.max_running},
           {"duration_seconds", run.seconds},
           {"output_tokens", l.output_tokens},
           {"output_tokens_per_second", l.output_tokens / run.seconds},
           {"total_tokens_per_second", (l.output_tokens + l.prompt_tokens) / run.seconds},
           {"ttft_ms", to_json(percentiles(l.ttft))},
           {"e2e_ms", to_json(percentiles(l.e2e))},
           {"tpot_ms", to_json(percentiles(l.tpot))}};
  if (a.shared_prefix_len > 0 && !l.ttft.empty()) {
    out["ttft_first_ms"] = l.ttft.front();
    out["ttft_later_ms"] = to_json(percentiles(l.ttft_later));
  }
  out["engine"] = engine_json(run);
  if (run.speculative_method != "none") out["speculative"] = speculative_json(run);
  std::printf("%s\n", out.dump(2).c_str());
}

void print_latency(const char* name, const std::vector<double>& values) {
  const Percentiles p = percentiles(values);
  std::printf("%-6s ms   mean %9.1f   p50 %9.1f   p90 %9.1f   p99 %9.1f\n", name, p.mean, p.p50,
              p.p90, p.p99);
}

void print_text(const ConcurrencyRun& run, const Latencies& l) {
  const ConcurrencyBenchArgs& a = run.args;
  const engine::EngineStats& s = run.engine;
  std::printf("model:       %s\nbackend:     %s\n", run.model.c_str(), run.backend.c_str());
  std::printf("requests:    %zu, %d at a time, prompt %d", run.requests.size(), a.concurrency,
              a.prompt_len);
  if (a.shared_prefix_len > 0) std::printf(" after a shared prefix of %d", a.shared_prefix_len);
  std::printf(" tokens, %d generated each", a.gen_len);
  if (a.temperature > 0.0f) {
    std::printf(", sampled at temperature %g (seeds %llu + i)", static_cast<double>(a.temperature),
                static_cast<unsigned long long>(a.seed));
    if (a.top_k > 0) std::printf(", top-k %d", a.top_k);
    if (a.top_p < 1.0f) std::printf(", top-p %g", static_cast<double>(a.top_p));
    if (a.min_p > 0.0f) std::printf(", min-p %g", static_cast<double>(a.min_p));
  }
  if (a.host_sampling) std::printf(", sampled on the host");
  std::printf("\n");
  std::printf("engine:      max_batched_tokens %d, max_running %d, %d KV blocks of %d tokens\n",
              a.max_batched_tokens, a.max_running, run.n_kv_blocks, run.block_size);
  std::printf("duration:    %.3f s\n", run.seconds);
  std::printf("output:      %lld tokens, %.2f tokens/s (prompt and output: %.2f tokens/s)\n",
              static_cast<long long>(l.output_tokens), l.output_tokens / run.seconds,
              (l.output_tokens + l.prompt_tokens) / run.seconds);
  print_latency("ttft", l.ttft);
  print_latency("e2e", l.e2e);
  print_latency("tpot", l.tpot);
  if (a.shared_prefix_len > 0 && !l.ttft.empty()) {
    const double later = percentiles(l.ttft_later).p50;
    std::printf("prefix:      ttft of the first request %.1f ms, of the later ones %.1f ms (p50)",
                l.ttft.front(), later);
    if (later > 0.0) std::printf("; first / later %.1f", l.ttft.front() / later);
    std::printf("\n");
  }
  std::printf(
      "steps:       %lld (%lld tokens: %lld prefilled, %lld decoded; %lld prefix-cache hits; "
      "%lld preemptions)\n",
      static_cast<long long>(s.n_steps), static_cast<long long>(s.n_batched_tokens),
      static_cast<long long>(s.scheduler.n_prefilled_tokens),
      static_cast<long long>(s.scheduler.n_decoded_tokens),
      static_cast<long long>(s.prefix_cache.hit_tokens),
      static_cast<long long>(s.scheduler.n_preemptions));
  std::printf(
      "step time:   schedule %.3f s, forward %.3f s (%lld decode-only steps: %.3f s, %.1f ms "
      "each), sample/detokenize/stop %.3f s\n",
      s.timings.schedule, s.timings.forward, static_cast<long long>(s.n_decode_steps),
      s.timings.forward_decode,
      s.n_decode_steps > 0 ? s.timings.forward_decode * 1e3 / s.n_decode_steps : 0.0,
      s.timings.postprocess);
  if (run.speculative_method != "none") {
    std::printf(
        "speculative: %s, %lld proposals verified, %lld kept (%.1f%%), %.2f kept per verifying "
        "step (%lld steps), draft passes %.3f s\n",
        run.speculative_method.c_str(), static_cast<long long>(s.scheduler.n_draft_tokens),
        static_cast<long long>(s.scheduler.n_accepted_draft_tokens),
        s.scheduler.acceptance_rate() * 100.0, s.scheduler.mean_accepted_length(),
        static_cast<long long>(s.scheduler.n_speculative_steps), s.timings.draft);
  }
}

}  // namespace

Percentiles percentiles(std::vector<double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    const double rank = q * static_cast<double>(values.size() - 1);
    const auto below = static_cast<size_t>(rank);
    const size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (values[above] - values[below]) * (rank - static_cast<double>(below));
  };
  p.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

void print_concurrency_report(const ConcurrencyRun& run, bool json) {
  const Latencies l = latencies_of(run);
  if (json) {
    print_json(run, l);
  } else {
    print_text(run, l);
  }
}

}  // namespace pagoda::cli
