#include "loadgen/benchmark_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "loadgen/benchmark_report.h"

namespace pagoda::loadgen {
namespace {

std::vector<RequestRecord> sample_records() {
  RequestRecord long_one;
  long_one.success = true;
  long_one.ttft_s = 0.1;
  long_one.e2e_s = 1.1;
  long_one.output_tokens = 11;
  long_one.itl_s = std::vector<double>(10, 0.1);
  long_one.prompt_tokens = 5;
  long_one.prompt_tokens_from_usage = long_one.output_tokens_from_usage = true;
  RequestRecord one_token;  // no TPOT: a single output token
  one_token.success = true;
  one_token.ttft_s = 0.3;
  one_token.e2e_s = 0.3;
  one_token.output_tokens = 1;
  one_token.prompt_tokens = 7;
  one_token.prompt_tokens_from_usage = one_token.output_tokens_from_usage = true;
  RequestRecord overloaded;
  overloaded.error = "HTTP 503: overloaded";
  overloaded.ttft_s = 99;  // failed requests count in no latency
  RequestRecord refused;
  refused.error = "connection refused";
  return {long_one, overloaded, one_token, refused};
}

TEST(BenchmarkMetrics, VllmDefinitionsOnHandMadeRecords) {
  const BenchmarkMetrics m = compute_metrics(sample_records(), 2.0);
  EXPECT_EQ(m.successful_requests, 2u);
  EXPECT_EQ(m.failed_requests, 2u);
  EXPECT_EQ(m.first_error, "HTTP 503: overloaded");
  EXPECT_EQ(m.total_input_tokens, 12);
  EXPECT_EQ(m.total_output_tokens, 12);
  EXPECT_DOUBLE_EQ(m.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(m.output_token_throughput, 6.0);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 12.0);
  // TTFT over {100, 300} ms.
  EXPECT_EQ(m.ttft_ms.count, 2u);
  EXPECT_NEAR(m.ttft_ms.mean, 200.0, 1e-9);
  EXPECT_NEAR(m.ttft_ms.p90, 280.0, 1e-9);
  EXPECT_NEAR(m.ttft_ms.p99, 298.0, 1e-9);
  EXPECT_NEAR(m.ttft_ms.std, 100.0, 1e-9);
  // TPOT: (1100 - 100) / (11 - 1) for the long request only.
  EXPECT_EQ(m.tpot_ms.count, 1u);
  EXPECT_NEAR(m.tpot_ms.mean, 100.0, 1e-9);
  // ITL: the ten gaps of the long request.
  EXPECT_EQ(m.itl_ms.count, 10u);
  EXPECT_NEAR(m.itl_ms.p99, 100.0, 1e-9);
  EXPECT_NEAR(m.e2e_ms.mean, 700.0, 1e-9);
  EXPECT_NEAR(m.e2e_ms.p50, 700.0, 1e-9);
  EXPECT_EQ(m.output_tokens_from_usage, 2u);
}

TEST(BenchmarkMetrics, NothingSucceeded) {
  RequestRecord failed;
  failed.error = "timed out";
  const BenchmarkMetrics m = compute_metrics(std::vector<RequestRecord>{failed}, 1.0);
  EXPECT_EQ(m.successful_requests, 0u);
  EXPECT_EQ(m.first_error, "timed out");
  EXPECT_DOUBLE_EQ(m.request_throughput, 0.0);
  EXPECT_EQ(m.ttft_ms.count, 0u);
}

ReportSettings sample_settings() {
  ReportSettings settings;
  settings.url = "http://127.0.0.1:8080";
  settings.endpoint = "/v1/completions";
  settings.model = "m";
  settings.prompts = "synthetic";
  settings.num_prompts = 4;
  settings.concurrency = 2;
  settings.request_rate = std::numeric_limits<double>::infinity();
  settings.connections_opened = 2;
  return settings;
}

TEST(BenchmarkReport, JsonHasTheStableKeys) {
  const BenchmarkMetrics m = compute_metrics(sample_records(), 2.0);
  const auto json = nlohmann::json::parse(json_report(m, sample_settings()));
  for (const char* key :
       {"successful_requests", "failed_requests", "first_error", "duration_s", "total_input_tokens",
        "total_output_tokens", "request_throughput", "output_token_throughput",
        "total_token_throughput", "input_tokens_source", "output_tokens_source", "url", "endpoint",
        "model", "num_prompts", "concurrency", "request_rate", "seed", "connections_opened"})
    EXPECT_TRUE(json.contains(key)) << key;
  for (const char* latency : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"})
    for (const char* stat : {"count", "mean", "p50", "p90", "p99", "std"})
      EXPECT_TRUE(json[latency].contains(stat)) << latency << "." << stat;
  EXPECT_EQ(json["successful_requests"], 2);
  EXPECT_EQ(json["failed_requests"], 2);
  EXPECT_EQ(json["first_error"], "HTTP 503: overloaded");
  EXPECT_DOUBLE_EQ(json["output_token_throughput"].get<double>(), 6.0);
  EXPECT_NEAR(json["ttft_ms"]["p90"].get<double>(), 280.0, 1e-9);
  EXPECT_EQ(json["input_tokens_source"], "usage");
  EXPECT_TRUE(json["request_rate"].is_null());  // inf has no JSON number
  EXPECT_EQ(json["concurrency"], 2);
}

TEST(BenchmarkReport, EmptyLatenciesAreNullInJsonAndDashesInText) {
  RequestRecord failed;
  failed.error = "HTTP 401: invalid api key";
  const BenchmarkMetrics m = compute_metrics(std::vector<RequestRecord>{failed}, 1.0);
  ReportSettings settings = sample_settings();
  settings.concurrency = 0;
  const auto json = nlohmann::json::parse(json_report(m, settings));
  EXPECT_TRUE(json["tpot_ms"]["mean"].is_null());
  EXPECT_EQ(json["tpot_ms"]["count"], 0);
  EXPECT_TRUE(json["concurrency"].is_null());
  const std::string text = text_report(m, settings);
  EXPECT_NE(text.find("Mean TTFT (ms):                          -\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Maximum request concurrency:             unlimited"), std::string::npos);
  EXPECT_NE(text.find("First error: HTTP 401: invalid api key"), std::string::npos);
}

TEST(BenchmarkReport, TextTableInVllmLayout) {
  const std::string text = text_report(compute_metrics(sample_records(), 2.0), sample_settings());
  EXPECT_EQ(text.rfind("============ Serving Benchmark Result ============\n", 0), 0u) << text;
  EXPECT_NE(text.find("Successful requests:                     2\n"), std::string::npos);
  EXPECT_NE(text.find("Output token throughput (tok/s):         6.00\n"), std::string::npos);
  EXPECT_NE(text.find("---------------Time to First Token----------------\n"), std::string::npos);
  EXPECT_NE(text.find("P90 TTFT (ms):                           280.00\n"), std::string::npos);
  EXPECT_NE(text.find("Median TPOT (ms):                        100.00\n"), std::string::npos);
}

}  // namespace
}  // namespace pagoda::loadgen
