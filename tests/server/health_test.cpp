#include "server/service/health.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

HealthInputs ready_inputs() {
  HealthInputs in;
  in.state = ServerState::kReady;
  in.model = "SmolLM2-135M-Instruct.Q4_1";
  in.uptime_seconds = 12.5;
  in.requests_served = 40;
  in.stats.n_running = 2;
  in.stats.n_waiting = 1;
  in.stats.kv_usage = 0.125;
  in.stats.prefix_cache.queried_tokens = 400;
  in.stats.prefix_cache.hit_tokens = 100;
  in.rss_bytes = 220200960;
  return in;
}

TEST(Health, ReadyBodyIsExact) {
  const HealthReport report = health_report(ready_inputs());
  EXPECT_EQ(report.http_status, 200);
  EXPECT_EQ(report.body,
            R"({"status":"ok","model":"SmolLM2-135M-Instruct.Q4_1","uptime_s":12.5,)"
            R"("requests_served":40,"running":2,"waiting":1,"kv_cache_usage":0.125,)"
            R"("prefix_cache_hit_rate":0.25,"memory_rss_bytes":220200960})");
}

TEST(Health, LoadingAndDrainingAre503) {
  HealthInputs in = ready_inputs();
  in.state = ServerState::kLoading;
  in.stats = {};
  in.rss_bytes.reset();
  HealthReport report = health_report(in);
  EXPECT_EQ(report.http_status, 503);
  nlohmann::json body = nlohmann::json::parse(report.body);
  EXPECT_EQ(body["status"], "loading");
  EXPECT_EQ(body["running"], 0);
  EXPECT_EQ(body["prefix_cache_hit_rate"], 0.0);  // nothing looked up yet: 0, not NaN
  EXPECT_TRUE(body["memory_rss_bytes"].is_null());

  in.state = ServerState::kDraining;
  report = health_report(in);
  EXPECT_EQ(report.http_status, 503);
  EXPECT_EQ(nlohmann::json::parse(report.body)["status"], "draining");
}

TEST(Health, ABrokenBackendIs503Failed) {
  HealthInputs in = ready_inputs();
  in.stats.backend_fault = "cuda:0 failed earlier and cannot run anything more";
  const HealthReport report = health_report(in);
  EXPECT_EQ(report.http_status, 503);
  const nlohmann::json body = nlohmann::json::parse(report.body);
  EXPECT_EQ(body["status"], "failed");
  EXPECT_EQ(body["error"], "cuda:0 failed earlier and cannot run anything more");
  EXPECT_EQ(body["running"], 2);
}

TEST(Health, SurvivesAModelNameThatIsNotUtf8) {
  HealthInputs in = ready_inputs();
  in.model = "bad\xff name";
  const nlohmann::json body = nlohmann::json::parse(health_report(in).body);
  EXPECT_EQ(body["model"], "bad\xef\xbf\xbd name");  // U+FFFD
}

TEST(Health, PrefixCacheHitRate) {
  engine::EngineStats stats;
  EXPECT_EQ(prefix_cache_hit_rate(stats), 0.0);
  stats.prefix_cache.queried_tokens = 3;
  stats.prefix_cache.hit_tokens = 3;
  EXPECT_EQ(prefix_cache_hit_rate(stats), 1.0);
}

}  // namespace
}  // namespace pagoda::server
