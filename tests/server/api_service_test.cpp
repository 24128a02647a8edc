// ApiService behind the real HTTP server, over a real engine (stories260K on the CPU):
// the middleware order (CORS preflight, auth on /v1 only, rate limit, routing), the
// generation endpoints against the engine's own output, a client that leaves, and the
// loading gate.
#include "server/service/api_service.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "gguf/reader.h"
#include "model/model.h"
#include "server/api_service_server.h"
#include "server/http_test_client.h"
#include "server/service/api_service_gate.h"
#include "server/webui/static_reply.h"
#include "server/webui/web_assets.h"
#include "test_data.h"

namespace pagoda::server {
namespace {

using namespace std::chrono_literals;
using testing::sse_payloads;
using testing::TestClient;
using testing::TestResponse;

constexpr int32_t kMaxModelLen = 512;

// The model and its engine, shared by every test of the suite (loading is the slow part).
struct SharedEngine {
  std::unique_ptr<gguf::Reader> file;
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<engine::Engine> engine;
};

SharedEngine* shared = nullptr;

class ApiServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shared = new SharedEngine;
    Expected<gguf::Reader> reader =
        gguf::Reader::open(pagoda::testing::model_path("stories260K.gguf"));
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    shared->file = std::make_unique<gguf::Reader>(std::move(*reader));
    backend::CpuBackendOptions backend_options;
    backend_options.n_threads = 1;  // the machine is shared
    shared->backend = backend::make_cpu_backend(backend_options);
    engine::EngineConfig config;
    config.scheduler.max_model_len = kMaxModelLen;
    config.scheduler.max_running = 4;
    config.scheduler.max_batched_tokens = 256;
    auto model = model::load_model(*shared->file, *shared->backend, config.load_options());
    ASSERT_TRUE(model.ok()) << model.status().message();
    shared->model = std::move(*model);
    auto tokenizer = tokenizer::Tokenizer::from_gguf(*shared->file);
    ASSERT_TRUE(tokenizer.ok());
    shared->tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(*tokenizer));
    auto engine =
        engine::Engine::create(*shared->model, *shared->backend, *shared->tokenizer, config);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    shared->engine = std::move(*engine);
  }
  static void TearDownTestSuite() {
    delete shared;
    shared = nullptr;
  }

  // A service with `options` behind a fresh server.
  void serve(ApiServiceOptions options = {}) {
    testing::start_api_service(*shared->engine, *shared->tokenizer,
                               ModelInfo{.name = "stories", .created = 1, .max_model_len = kMaxModelLen},
                               tokenizer::kChatMLTemplate, std::move(options), metrics_, service_, server_);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  TestResponse exchange(const std::string& request) {
    TestClient client(server_->port());
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.send(request));
    std::optional<TestResponse> response = client.read_response(10s);
    EXPECT_TRUE(response.has_value()) << request;
    return response.value_or(TestResponse{});
  }
  TestResponse post(std::string_view path, const nlohmann::json& body,
                    std::string_view headers = "") {
    return exchange(testing::post_request(path, body.dump(), headers));
  }
  TestResponse get(std::string_view path, std::string_view headers = "") {
    return exchange(testing::get_request(path, headers));
  }

  // The engine's own greedy text for a prompt, through a sink of our own.
  std::string engine_text(const std::string& prompt, int32_t max_tokens) {
    struct Collect : engine::RequestSink {
      std::mutex mutex;
      std::string text;
      bool done = false;
      void on_output(engine::RequestOutput output) override {
        const std::lock_guard lock(mutex);
        text += output.text;
        done |= output.finish != engine::FinishReason::kNone;
      }
    };
    auto sink = std::make_shared<Collect>();
    engine::EngineRequest request;
    request.prompt = shared->tokenizer->encode(prompt, true, true);
    request.sampling.temperature = 0.0f;
    request.stop.max_tokens = max_tokens;
    request.stop.ignore_eog = true;
    EXPECT_TRUE(shared->engine->add(std::move(request), sink).ok());
    EXPECT_TRUE(testing::eventually(
        [&] {
          const std::lock_guard lock(sink->mutex);
          return sink->done;
        },
        10s));
    const std::lock_guard lock(sink->mutex);
    return sink->text;
  }

  ServerMetrics metrics_;
  std::unique_ptr<ApiService> service_;
  std::unique_ptr<HttpServer> server_;
};

nlohmann::json error_of(const TestResponse& response) {
  const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  EXPECT_TRUE(body.is_object() && body.contains("error")) << response.body;
  return body.is_object() && body.contains("error") ? body["error"] : nlohmann::json();
}

TEST_F(ApiServiceTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  serve();
  TestResponse response = get("/v1/nothing");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(error_of(response)["type"], "invalid_request_error");
  response = get("/v1/completions");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.header("allow"), "POST");
  error_of(response);
}

TEST_F(ApiServiceTest, AuthGuardsV1BeforeRoutingAndLeavesProbesOpen) {
  ApiServiceOptions options;
  auto keys = ApiKeys::load({"secret"}, "");
  ASSERT_TRUE(keys.ok());
  options.api_keys = std::move(*keys);
  serve(std::move(options));
  EXPECT_EQ(get("/v1/nothing").status, 401);  // auth first: no path probing without a key
  EXPECT_EQ(get("/v1/nothing", "Authorization: Bearer secret\r\n").status, 404);
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer wrong\r\n").status, 401);
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer secret\r\n").status, 200);
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(get("/metrics").status, 200);
  EXPECT_EQ(post("/tokenize", {{"prompt", "Once"}}).status, 200);
}

TEST_F(ApiServiceTest, RateLimitIsPerKeyWithRetryAfter) {
  ApiServiceOptions options;
  auto keys = ApiKeys::load({"a", "b"}, "");
  ASSERT_TRUE(keys.ok());
  options.api_keys = std::move(*keys);
  options.rate_limit_rpm = 2;
  serve(std::move(options));
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer a\r\n").status, 200);
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer a\r\n").status, 200);
  const TestResponse limited = get("/v1/models", "Authorization: Bearer a\r\n");
  EXPECT_EQ(limited.status, 429);
  EXPECT_GE(std::stoi(limited.header("retry-after")), 1);
  EXPECT_EQ(error_of(limited)["code"], "rate_limit_exceeded");
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer b\r\n").status, 200);  // its own bucket
  EXPECT_EQ(get("/health").status, 200);                                    // not limited
}

TEST_F(ApiServiceTest, PreflightIsAnsweredBeforeAuth) {
  ApiServiceOptions options;
  auto keys = ApiKeys::load({"secret"}, "");
  auto cors = CorsPolicy::create({"https://app.example"});
  ASSERT_TRUE(keys.ok() && cors.ok());
  options.api_keys = std::move(*keys);
  options.cors = std::move(*cors);
  serve(std::move(options));
  const TestResponse preflight = exchange(
      "OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\n"
      "Access-Control-Request-Method: POST\r\n\r\n");
  EXPECT_EQ(preflight.status, 204);
  EXPECT_EQ(preflight.header("access-control-allow-origin"), "https://app.example");
  const TestResponse refused = get("/v1/models", "Origin: https://app.example\r\n");
  EXPECT_EQ(refused.status, 401);  // CORS headers even on errors, so the page can read them
  EXPECT_EQ(refused.header("access-control-allow-origin"), "https://app.example");
}

TEST_F(ApiServiceTest, GreedyCompletionIsTheEnginesOwnText) {
  serve();
  const std::string expected = engine_text("Once upon a time", 12);
  const TestResponse response = post("/v1/completions", {{"prompt", "Once upon a time"},
                                                         {"max_tokens", 12},
                                                         {"temperature", 0},
                                                         {"ignore_eos", true}});
  ASSERT_EQ(response.status, 200) << response.body;
  const nlohmann::json body = nlohmann::json::parse(response.body);
  EXPECT_EQ(body["choices"][0]["text"], expected);
  EXPECT_EQ(body["model"], "stories");
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
}

TEST_F(ApiServiceTest, FormatsAndToolsThatDoNotCompileAre400sNamingTheField) {
  serve();
  const nlohmann::json messages = {{{"role", "user"}, {"content", "Hi"}}};
  const TestResponse schema = post(
      "/v1/chat/completions",
      {{"messages", messages},
       {"response_format",
        {{"type", "json_schema"},
         {"json_schema",
          {{"name", "x"}, {"schema", {{"type", "object"}, {"patternProperties", {}}}}}}}}});
  ASSERT_EQ(schema.status, 400) << schema.body;
  EXPECT_EQ(error_of(schema)["param"], "response_format.json_schema.schema");
  const TestResponse gbnf = post("/v1/completions", {{"prompt", "Once"},
                                                     {"guided_grammar", "root ::= nowhere"}});
  ASSERT_EQ(gbnf.status, 400) << gbnf.body;
  EXPECT_EQ(error_of(gbnf)["param"], "guided_grammar");
  const std::string message = error_of(gbnf)["message"];
  EXPECT_TRUE(message.starts_with("Invalid 'guided_grammar': the grammar is not valid: line 1"))
      << message;
  const nlohmann::json bad_tool = {
      {"type", "function"},
      {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"not", {}}}}}}};
  const TestResponse tool =
      post("/v1/chat/completions", {{"messages", messages},
                                    {"tools", nlohmann::json::array({bad_tool})},
                                    {"tool_choice", "required"}});
  ASSERT_EQ(tool.status, 400) << tool.body;
  EXPECT_EQ(error_of(tool)["param"], "tools[0].function.parameters");
}

TEST_F(ApiServiceTest, ConstrainedRequestsRunWholeAndStreamed) {
  serve();
  const TestResponse choice = post("/v1/completions", {{"prompt", "Once upon a time"},
                                                       {"max_tokens", 4},
                                                       {"guided_choice", {"yes", "no"}}});
  ASSERT_EQ(choice.status, 200) << choice.body;
  const nlohmann::json tool = {
      {"type", "function"},
      {"function",
       {{"name", "get_weather"},
        {"parameters",
         {{"type", "object"},
          {"properties", {{"city", {{"type", "string"}}}}},
          {"required", {"city"}}}}}}};
  const nlohmann::json body = {{"messages", {{{"role", "user"}, {"content", "Weather?"}}}},
                               {"tools", nlohmann::json::array({tool})},
                               {"max_tokens", 8}};
  const TestResponse whole = post("/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const nlohmann::json answer = nlohmann::json::parse(whole.body)["choices"][0];
  EXPECT_EQ(answer["message"]["role"], "assistant");
  const std::string finish = answer["finish_reason"];
  EXPECT_TRUE(finish == "stop" || finish == "length" || finish == "tool_calls") << finish;
  EXPECT_EQ(answer["message"].contains("tool_calls"), finish == "tool_calls") << whole.body;
  nlohmann::json streamed_body = body;
  streamed_body["stream"] = true;
  const TestResponse streamed = post("/v1/chat/completions", streamed_body);
  ASSERT_EQ(streamed.status, 200);
  const std::vector<std::string> payloads = sse_payloads(streamed.body);
  ASSERT_GE(payloads.size(), 3u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  const nlohmann::json last = nlohmann::json::parse(payloads[payloads.size() - 2]);
  EXPECT_FALSE(last["choices"][0]["finish_reason"].is_null()) << payloads[payloads.size() - 2];
}

TEST_F(ApiServiceTest, StreamedChoicesCarryTheirIndexAndEndWithDone) {
  serve();
  const TestResponse response =
      post("/v1/completions", {{"prompt", nlohmann::json::array({"Once upon a time", "The cat"})},
                               {"max_tokens", 6},
                               {"ignore_eos", true},
                               {"n", 2},
                               {"seed", 5},
                               {"stream", true},
                               {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(response.status, 200);
  const std::vector<std::string> payloads = sse_payloads(response.body);
  ASSERT_GE(payloads.size(), 3u);
  EXPECT_EQ(payloads.back(), "[DONE]");
  std::map<int, std::string> finish;
  for (size_t i = 0; i + 2 < payloads.size(); ++i) {
    const nlohmann::json chunk = nlohmann::json::parse(payloads[i]);
    ASSERT_EQ(chunk["choices"].size(), 1u) << payloads[i];
    const nlohmann::json& choice = chunk["choices"][0];
    if (!choice["finish_reason"].is_null()) finish[choice["index"]] = choice["finish_reason"];
  }
  EXPECT_EQ(finish.size(), 4u);  // two prompts, two completions each: indexes 0..3
  const nlohmann::json usage = nlohmann::json::parse(payloads[payloads.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 24);
}

TEST_F(ApiServiceTest, AClientThatLeavesEndsItsRequest) {
  serve();
  TestClient client(server_->port());
  // As long as the context allows, so that it is still running when the client leaves.
  const nlohmann::json body = {{"prompt", "Once upon a time"},
                               {"max_tokens", kMaxModelLen - 16},
                               {"ignore_eos", true},
                               {"stream", true}};
  ASSERT_TRUE(client.send(testing::post_request("/v1/completions", body.dump())));
  ASSERT_TRUE(client.read_until("data: ", 10s).has_value());
  client.reset();
  EXPECT_TRUE(testing::eventually(
      [] {
        const engine::EngineStats stats = shared->engine->stats();
        return stats.n_running == 0 && stats.n_waiting == 0 && stats.kv_usage == 0.0;
      },
      1s));
  EXPECT_TRUE(testing::eventually([this] { return service_->active_generations() == 0; }, 1s));
  EXPECT_NE(metrics_.render(shared->engine->stats()).find("finish_reason=\"abort\"} 1"),
            std::string::npos);
}

TEST_F(ApiServiceTest, PromptLongerThanTheContextNamesBothLengths) {
  serve();
  std::string prompt;
  for (int i = 0; i < 2 * kMaxModelLen; ++i) prompt += "Once upon a time ";
  const int n_tokens = static_cast<int>(shared->tokenizer->encode(prompt, true, true).size());
  const TestResponse response = post("/v1/completions", {{"prompt", prompt}, {"max_tokens", 4}});
  EXPECT_EQ(response.status, 400);
  const std::string message = error_of(response)["message"];
  EXPECT_NE(message.find(std::to_string(kMaxModelLen)), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(n_tokens)), std::string::npos) << message;
}

TEST_F(ApiServiceTest, TokenizeAnswersLlamaServerClientsInTheirShape) {
  serve();
  const TestResponse response =
      post("/tokenize", {{"content", "Once upon"}, {"with_pieces", true}});
  ASSERT_EQ(response.status, 200) << response.body;
  const nlohmann::json body = nlohmann::json::parse(response.body);
  // No BOS: llama-server adds special tokens only when asked.
  const std::vector<int32_t> ids = shared->tokenizer->encode("Once upon", false, true);
  ASSERT_EQ(body["tokens"].size(), ids.size());
  std::string joined;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(body["tokens"][i]["id"], ids[i]);
    joined += body["tokens"][i]["piece"].get<std::string>();
  }
  EXPECT_EQ(joined, " Once upon");  // SentencePiece's leading space, as the pieces have it

  const TestResponse detok = post("/detokenize", {{"tokens", ids}});
  ASSERT_EQ(detok.status, 200) << detok.body;
  const nlohmann::json text = nlohmann::json::parse(detok.body);
  EXPECT_EQ(text["content"], text["prompt"]);
  EXPECT_EQ(text["content"], "Once upon");
}

TEST_F(ApiServiceTest, MetricsAtTheOperatorsPathOrNowhere) {
  ApiServiceOptions options;
  options.metrics_path = "/internal/prom";
  serve(std::move(options));
  const TestResponse moved = get("/internal/prom");
  EXPECT_EQ(moved.status, 200);
  EXPECT_NE(moved.body.find("pagoda_num_requests_running"), std::string::npos);
  EXPECT_EQ(get("/metrics").status, 404);
}

TEST_F(ApiServiceTest, MetricsTurnedOffAre404) {
  ApiServiceOptions options;
  options.metrics = false;
  serve(std::move(options));
  EXPECT_EQ(get("/metrics").status, 404);
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(ApiServiceTest, UnknownModelIs404AndNAboveTheRunningCapIs400) {
  serve();
  TestResponse response = post("/v1/completions", {{"model", "other"}, {"prompt", "Once"}});
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(error_of(response)["code"], "model_not_found");
  response = post("/v1/completions", {{"prompt", "Once"}, {"n", 5}, {"max_tokens", 2}});
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(error_of(response)["param"], "n");
}

// The chat page is public even with API keys on (the page asks for the key), with its
// type, security headers, gzip on request, and 304 for a current copy.
TEST_F(ApiServiceTest, ChatPageIsPublicWithItsHeaders) {
  ApiServiceOptions options;
  auto keys = ApiKeys::load({"secret"}, "");
  ASSERT_TRUE(keys.ok());
  options.api_keys = std::move(*keys);
  serve(std::move(options));
  const WebAsset* page = find_web_asset("/index.html");
  ASSERT_NE(page, nullptr);
  TestResponse response = get("/");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(response.body, page->bytes);
  EXPECT_EQ(response.header("content-security-policy"), kWebContentSecurityPolicy);
  EXPECT_EQ(response.header("x-content-type-options"), "nosniff");
  EXPECT_EQ(response.header("cache-control"), "no-cache");
  EXPECT_EQ(response.header("etag"), page->etag);
  EXPECT_EQ(response.header("content-encoding"), "");
  EXPECT_EQ(get("/index.html").body, page->bytes);

  response = get("/app.js", "Accept-Encoding: gzip, deflate\r\n");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(response.header("content-encoding"), "gzip");
  EXPECT_EQ(response.header("vary"), "Accept-Encoding");
  EXPECT_EQ(response.body, find_web_asset("/app.js")->gzip_bytes);

  response = get("/", "If-None-Match: " + std::string(page->etag) + "\r\n");
  EXPECT_EQ(response.status, 304);
  EXPECT_TRUE(response.body.empty());
  EXPECT_EQ(response.header("content-length"), "");
  EXPECT_EQ(response.header("etag"), page->etag);

  EXPECT_EQ(get("/v1/models").status, 401);  // the API keeps its key
  EXPECT_EQ(get("/favicon.ico").status, 404);
  response = post("/", nlohmann::json::object());
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.header("allow"), "GET, HEAD");
}

TEST_F(ApiServiceTest, WithoutTheWebUiThePageIs404) {
  ApiServiceOptions options;
  options.web_ui = false;
  serve(std::move(options));
  for (const std::string_view path : {"/", "/index.html", "/app.js"}) {
    const TestResponse response = get(path);
    EXPECT_EQ(response.status, 404) << path;
    EXPECT_EQ(error_of(response)["type"], "invalid_request_error");
  }
  EXPECT_EQ(post("/", nlohmann::json::object()).status, 404);
  EXPECT_EQ(get("/v1/models").status, 200);
}

TEST_F(ApiServiceTest, TheGateAnswersLoadingUntilOpened) {
  ServiceGate gate("stories", metrics_, std::chrono::steady_clock::now());
  server_ = testing::start_server([&gate](Exchange& exchange) { return gate.handle(exchange); });
  ASSERT_NE(server_, nullptr);
  TestResponse response = get("/health");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(nlohmann::json::parse(response.body)["status"], "loading");
  response = get("/v1/models");
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.header("retry-after"), "1");
  auto chat_template = tokenizer::ChatTemplate::parse(tokenizer::kChatMLTemplate);
  ASSERT_TRUE(chat_template.ok());
  ApiService service(*shared->engine, *shared->tokenizer,
                     ModelInfo{.name = "stories", .created = 1, .max_model_len = kMaxModelLen},
                     std::move(*chat_template), {}, metrics_);
  gate.open(service);
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(get("/v1/models").status, 200);
  server_->stop();
}

}  // namespace
}  // namespace pagoda::server
