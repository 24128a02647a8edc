#include "server/service/health.h"

#include <nlohmann/json.hpp>

namespace pagoda::server {

const char* server_state_name(ServerState state) {
  switch (state) {
    case ServerState::kLoading: return "loading";
    case ServerState::kReady: return "ok";
    case ServerState::kDraining: return "draining";
    case ServerState::kFailed: return "failed";
  }
  return "unknown";
}

double prefix_cache_hit_rate(const engine::EngineStats& stats) {
  const int64_t queried = stats.prefix_cache.queried_tokens;
  if (queried <= 0) return 0.0;
  return static_cast<double>(stats.prefix_cache.hit_tokens) / static_cast<double>(queried);
}

HealthReport health_report(const HealthInputs& in) {
  nlohmann::ordered_json body;
  // A broken backend outranks being ready: nothing can be served any more.
  const ServerState state =
      in.state == ServerState::kReady && !in.stats.backend_fault.empty() ? ServerState::kFailed : in.state;
  body["status"] = server_state_name(state);
  if (state == ServerState::kFailed) body["error"] = in.stats.backend_fault;
  body["model"] = in.model;
  body["uptime_s"] = in.uptime_seconds;
  body["requests_served"] = in.requests_served;
  body["running"] = in.stats.n_running;
  body["waiting"] = in.stats.n_waiting;
  body["kv_cache_usage"] = in.stats.kv_usage;
  body["prefix_cache_hit_rate"] = prefix_cache_hit_rate(in.stats);
  body["memory_rss_bytes"] = in.rss_bytes ? nlohmann::ordered_json(*in.rss_bytes) : nullptr;
  // Replace invalid UTF-8 (a model name is the user's file name) rather than throw.
  return {.http_status = state == ServerState::kReady ? 200 : 503,
          .body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

}  // namespace pagoda::server
