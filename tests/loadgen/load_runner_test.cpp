// End-to-end: the load generator against a fake OpenAI-compatible server that streams
// fixed tokens after fixed delays. Bounds on timings are generous (this checks that
// the right things are measured, not how fast the machine is).
#include "loadgen/load_runner.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include "fake_openai_server.h"
#include "loadgen/arrival_schedule.h"
#include "loadgen/benchmark_metrics.h"
#include "loadgen/synthetic_prompts.h"

namespace pagoda::loadgen {
namespace {

using testing::FakeOpenAiServer;
using testing::FakeServerOptions;
using namespace std::chrono_literals;

ServerTarget target_of(const std::string& url, std::string api_key = {}) {
  ServerTarget target;
  target.url = parse_server_url(url).value();
  target.api_key = std::move(api_key);
  return target;
}

RunOptions options_for(std::string endpoint, size_t concurrency = 0) {
  RunOptions options;
  options.request.endpoint = std::move(endpoint);
  options.request.kind = api_kind_of_endpoint(options.request.endpoint);
  options.request.model = "fake-model";
  options.request.timeout = 20s;
  options.concurrency = concurrency;
  return options;
}

std::vector<BenchPrompt> prompts(size_t count, int32_t words, int32_t max_tokens) {
  return synthetic_prompts(count, words, max_tokens, WordTokenRate{}, 99);
}

TEST(LoadRunner, StreamsCompletionsTimesThemAndReusesConnections) {
  FakeServerOptions server_options;
  server_options.first_token_delay = 30ms;
  server_options.token_delay = 10ms;
  FakeOpenAiServer server(server_options);
  size_t progress_calls = 0;
  RunOptions options = options_for("/v1/completions", 4);
  options.on_progress = [&](const RunProgress& p) {
    ++progress_calls;
    EXPECT_EQ(p.total, 12u);
    EXPECT_LE(p.finished, p.total);
  };
  auto result = run_load(target_of(server.url()), prompts(12, 20, 8), options);
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_EQ(result->records.size(), 12u);
  for (const RequestRecord& r : result->records) {
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.output_tokens, 8);
    EXPECT_TRUE(r.output_tokens_from_usage);
    EXPECT_EQ(r.prompt_tokens, 20);  // the fake counts words
    EXPECT_EQ(r.text_chunks, 8);
    EXPECT_EQ(r.itl_s.size(), 7u);
    EXPECT_GE(r.ttft_s, 0.030);
    EXPECT_LT(r.ttft_s, 5.0);
    EXPECT_GE(r.e2e_s, 0.030 + 7 * 0.010);  // the server's sleeps alone take this long
    EXPECT_LT(r.e2e_s, 10.0);
  }
  EXPECT_EQ(progress_calls, 13u);  // once at the start, once per request
  EXPECT_EQ(server.peak_streams(), 4);
  EXPECT_EQ(result->connections_opened, 4u);
  EXPECT_EQ(server.connections_accepted(), 4);
  EXPECT_EQ(server.completion_requests(), 12);

  const BenchmarkMetrics m = compute_metrics(result->records, result->duration_s);
  EXPECT_EQ(m.successful_requests, 12u);
  EXPECT_EQ(m.total_output_tokens, 96);
  EXPECT_EQ(m.total_input_tokens, 240);
  EXPECT_EQ(m.itl_ms.count, 84u);
  EXPECT_GT(m.itl_ms.mean, 5.0);
  EXPECT_LT(m.itl_ms.mean, 500.0);
  EXPECT_GT(m.tpot_ms.mean, 5.0);
  EXPECT_LT(m.tpot_ms.mean, 500.0);
  // Three waves of four requests, each at least 100 ms long.
  EXPECT_GE(result->duration_s, 0.3);
  EXPECT_NEAR(m.output_token_throughput, 96 / result->duration_s, 1e-9);

  const auto body = nlohmann::json::parse(server.completion_bodies().front());
  EXPECT_EQ(body["model"], "fake-model");
  EXPECT_EQ(body["max_tokens"], 8);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["stream"], true);
}

TEST(LoadRunner, ChatWithoutUsageCountsStreamedChunks) {
  FakeServerOptions server_options;
  server_options.send_usage = false;
  server_options.crlf = true;
  FakeOpenAiServer server(server_options);
  std::vector<BenchPrompt> chat_prompts = prompts(3, 10, 5);
  for (BenchPrompt& p : chat_prompts) p.prompt_tokens = 17;  // what was known before sending
  auto result =
      run_load(target_of(server.url()), chat_prompts, options_for("/v1/chat/completions"));
  ASSERT_TRUE(result.ok());
  for (const RequestRecord& r : result->records) {
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.output_tokens, 5);  // the role chunk and the finish chunk carry no text
    EXPECT_FALSE(r.output_tokens_from_usage);
    EXPECT_EQ(r.prompt_tokens, 17);
    EXPECT_FALSE(r.prompt_tokens_from_usage);
  }
  const auto body = nlohmann::json::parse(server.completion_bodies().front());
  EXPECT_EQ(body["messages"][0]["role"], "user");
}

TEST(LoadRunner, FailedRequestsAreCountedWithTheServersMessage) {
  FakeServerOptions server_options;
  server_options.fail_every = 3;
  FakeOpenAiServer server(server_options);
  auto result =
      run_load(target_of(server.url()), prompts(9, 5, 3), options_for("/v1/completions", 1));
  ASSERT_TRUE(result.ok());
  const BenchmarkMetrics m = compute_metrics(result->records, result->duration_s);
  EXPECT_EQ(m.successful_requests, 6u);
  EXPECT_EQ(m.failed_requests, 3u);
  EXPECT_EQ(m.first_error, "HTTP 503: server overloaded");
  EXPECT_EQ(result->records[2].http_status, 503);
  EXPECT_FALSE(result->records[2].success);
  EXPECT_EQ(m.total_output_tokens, 18);
  EXPECT_EQ(result->connections_opened, 1u);  // error responses keep the connection alive
}

TEST(LoadRunner, ApiKeyIsSentAsBearerToken) {
  FakeServerOptions server_options;
  server_options.api_key = "sekret";
  FakeOpenAiServer server(server_options);
  auto refused =
      run_load(target_of(server.url(), "wrong"), prompts(2, 5, 2), options_for("/v1/completions"));
  ASSERT_TRUE(refused.ok());
  for (const RequestRecord& r : refused->records) {
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.error, "HTTP 401: invalid api key");
  }
  auto allowed =
      run_load(target_of(server.url(), "sekret"), prompts(2, 5, 2), options_for("/v1/completions"));
  ASSERT_TRUE(allowed.ok());
  for (const RequestRecord& r : allowed->records) EXPECT_TRUE(r.success) << r.error;
}

TEST(LoadRunner, SendsFollowThePoissonSchedule) {
  FakeServerOptions server_options;
  server_options.first_token_delay = 1ms;
  server_options.token_delay = 1ms;
  FakeOpenAiServer server(server_options);
  RunOptions options = options_for("/v1/completions");
  options.request_rate = 20.0;
  options.seed = 3;
  auto result = run_load(target_of(server.url()), prompts(10, 5, 2), options);
  ASSERT_TRUE(result.ok());
  const std::vector<double> offsets = poisson_arrival_offsets(10, 20.0, 3).value();
  for (size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_TRUE(result->records[i].success) << result->records[i].error;
    EXPECT_GE(result->records[i].send_time_s, offsets[i]) << i;  // timers never fire early
    EXPECT_LT(result->records[i].send_time_s, offsets[i] + 1.0) << i;
  }
  EXPECT_GE(result->duration_s, offsets.back());
}

TEST(LoadRunner, NoConcurrencyCapSendsEverythingAtOnce) {
  FakeServerOptions server_options;
  server_options.first_token_delay = 300ms;
  FakeOpenAiServer server(server_options);
  auto result = run_load(target_of(server.url()), prompts(6, 5, 2), options_for("/v1/completions"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(server.peak_streams(), 6);
  EXPECT_EQ(result->connections_opened, 6u);
}

TEST(LoadRunner, HundredsOfConcurrentStreamsOnOneThread) {
  FakeServerOptions server_options;
  server_options.first_token_delay = 400ms;  // long enough for every stream to be open at once
  FakeOpenAiServer server(server_options);
  auto result =
      run_load(target_of(server.url()), prompts(256, 4, 3), options_for("/v1/completions"));
  ASSERT_TRUE(result.ok());
  for (const RequestRecord& r : result->records) ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(server.peak_streams(), 256);
  EXPECT_EQ(compute_metrics(result->records, result->duration_s).total_output_tokens, 768);
}

TEST(LoadRunner, ConnectionsTheServerDroppedWhileIdleAreRetried) {
  FakeServerOptions server_options;
  server_options.drop_after_response = true;  // keep-alive announced, then closed anyway
  FakeOpenAiServer server(server_options);
  auto result =
      run_load(target_of(server.url()), prompts(5, 5, 2), options_for("/v1/completions", 1));
  ASSERT_TRUE(result.ok());
  for (const RequestRecord& r : result->records) EXPECT_TRUE(r.success) << r.error;
  EXPECT_EQ(server.completion_requests(), 5);
  EXPECT_EQ(result->connections_opened, 5u);
}

TEST(LoadRunner, RefusedConnectionsFailEveryRequest) {
  uint16_t port = 0;
  {  // a port that was free a moment ago and has no listener now
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acceptor.local_endpoint().port();
  }
  auto result = run_load(target_of("http://127.0.0.1:" + std::to_string(port)), prompts(3, 5, 2),
                         options_for("/v1/completions"));
  ASSERT_TRUE(result.ok());
  for (const RequestRecord& r : result->records) {
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.http_status, 0);
    EXPECT_NE(r.error.find("cannot connect"), std::string::npos) << r.error;
  }
}

TEST(LoadRunner, RequestsPastTheirTimeoutFail) {
  FakeServerOptions server_options;
  server_options.first_token_delay = 3000ms;
  FakeOpenAiServer server(server_options);
  RunOptions options = options_for("/v1/completions");
  options.request.timeout = 200ms;
  auto result = run_load(target_of(server.url()), prompts(2, 5, 2), options);
  ASSERT_TRUE(result.ok());
  for (const RequestRecord& r : result->records) {
    EXPECT_FALSE(r.success);
    EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  }
  EXPECT_LT(result->duration_s, 2.5);
}

TEST(LoadRunner, UnknownEndpointIsAnHttpError) {
  FakeOpenAiServer server;
  auto result = run_load(target_of(server.url()), prompts(1, 5, 2), options_for("/v2/nothing"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->records[0].http_status, 404);
  EXPECT_EQ(result->records[0].error, "HTTP 404: no route /v2/nothing");
}

TEST(LoadRunner, BadRateIsAnError) {
  RunOptions options = options_for("/v1/completions");
  options.request_rate = 0.0;
  EXPECT_FALSE(run_load(target_of("http://127.0.0.1:1"), prompts(1, 5, 2), options).ok());
}

}  // namespace
}  // namespace pagoda::loadgen
