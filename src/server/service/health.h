#pragma once
// The body of GET /health, from plain inputs (so it is built and tested without a
// server). 200 with status "ok" when serving; 503 with "loading" while the model loads,
// "draining" while shutting down, and "failed" (with "error") once the backend can run
// nothing more (a GPU kernel fault), so that load balancers route elsewhere.
//
//   {"status":"ok","model":"SmolLM2-135M-Instruct.Q4_1","uptime_s":12.5,
//    "requests_served":40,"running":2,"waiting":0,"kv_cache_usage":0.125,
//    "prefix_cache_hit_rate":0.5,"memory_rss_bytes":220200960}
//
// kv_cache_usage is the share of KV blocks requests hold (0 to 1); prefix_cache_hit_rate
// is cached prompt tokens over prompt tokens looked up since start (0 before any).

#include <cstdint>
#include <optional>
#include <string>

#include "engine/engine_core.h"

namespace pagoda::server {

enum class ServerState { kLoading, kReady, kDraining, kFailed };

struct HealthInputs {
  ServerState state = ServerState::kLoading;
  std::string model;             // served model name
  double uptime_seconds = 0.0;   // since the process started serving (loading included)
  int64_t requests_served = 0;   // HTTP requests answered
  engine::EngineStats stats;     // zeros while loading
  std::optional<uint64_t> rss_bytes;  // nothing where it cannot be read (null in the JSON)
};

struct HealthReport {
  int http_status = 200;  // 200 ready, 503 otherwise
  std::string body;       // JSON
};

const char* server_state_name(ServerState state);  // "loading", "ok", "draining"
double prefix_cache_hit_rate(const engine::EngineStats& stats);
HealthReport health_report(const HealthInputs& inputs);

}  // namespace pagoda::server
