#pragma once
// The OpenAI-compatible API over one engine: routing, the middleware, the endpoints.
//
// Each request goes through, in order:
//   1. request id   the transport's (X-Request-Id echoed or made), on every reply
//   2. CORS         a preflight is answered here (204; 400 from an origin not allowed);
//                   other replies carry the headers, errors included
//   3. auth         /v1/* only, as vLLM: `Authorization: Bearer <key>` or 401. /health,
//                   /metrics, /tokenize and /detokenize stay open (probes and scrapers
//                   carry no key; the last two run no generation), and so does the chat
//                   page (it asks the user for a key and sends it on its API calls)
//   4. rate limit   /v1/* only: per API key, or per client address without keys; 429 +
//                   Retry-After
//   5. routing      404 for an unknown path, 405 (+ Allow) for a known one with another
//                   method, both in OpenAI's error shape
//   6. admission    generation endpoints only: while the engine has max_queued requests
//                   waiting, or the server drains for shutdown, 503 + Retry-After and
//                   nothing is started
// then the endpoint. Every request ends with one access-log line and its count in the
// metrics (by route and status; a client that left early counts as 499).

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "server/http/http_exchange.h"
#include "server/metrics/metrics.h"
#include "server/openai/api_error.h"
#include "server/service/api_keys.h"
#include "server/service/api_service_generation.h"
#include "server/service/api_service_grammar.h"
#include "server/service/api_service_prompt.h"
#include "server/service/cors.h"
#include "server/service/health.h"
#include "server/service/rate_limiter.h"
#include "server/service/router.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

// The served model, as /v1/models shows it.
struct ModelInfo {
  std::string name;           // the id clients pass as "model"
  int64_t created = 0;        // unix seconds (when the server started)
  int32_t max_model_len = 0;  // the context, prompt and output together
};

struct ApiServiceOptions {
  ApiKeys api_keys;                 // none: auth off
  CorsPolicy cors;                  // off unless origins are configured
  int64_t rate_limit_rpm = 0;       // requests per minute per key; <= 0: no limit
  int32_t max_queued = 0;           // waiting requests before 503; <= 0: no bound
  // How far ahead of the default (priority 0) a request may ask to be scheduled: a
  // `priority` below -max_priority_boost is a 400. Lower values run first; asking to run
  // later (a positive value) is always allowed. 0: no request can overtake the default.
  int32_t max_priority_boost = 0;
  int32_t retry_after_seconds = 1;  // Retry-After of a 503 for a full queue
  bool log_prompts = false;         // access lines carry the prompt
  size_t grammar_cache_size = 64;  // compiled grammars kept, by GBNF text
  bool web_ui = true;               // serve the chat page at / (webui/web_assets.h)
  bool metrics = true;              // serve the Prometheus text
  std::string metrics_path = "/metrics";  // where (router.h: check_metrics_path)
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

class ApiService {
 public:
  // engine, tokenizer and metrics must outlive the service. `chat_template` renders every
  // conversation (chosen once at start: the model's, an override, or ChatML).
  ApiService(engine::Engine& engine, const tokenizer::Tokenizer& tokenizer, ModelInfo model,
             tokenizer::ChatTemplate chat_template, ApiServiceOptions options,
             ServerMetrics& metrics);
  ApiService(const ApiService&) = delete;
  ApiService& operator=(const ApiService&) = delete;

  // The HTTP handler (see HttpServer): one call per request, on the connection's strand.
  asio::awaitable<void> handle(Exchange& exchange);

  // Shutdown: /health answers 503 "draining" from now on.
  void set_draining() { draining_ = true; }
  // Ends every generation in flight (finish_reason "abort"); for the end of the grace
  // period. Thread-safe.
  void abort_all() { active_.abort_all(); }
  std::size_t active_generations() const { return active_.size(); }

  const ModelInfo& model() const { return model_; }

 private:
  using Clock = std::chrono::steady_clock;

  // What an endpoint did, for the access log.
  struct Handled {
    int status = 0;
    std::optional<GenerationOutcome> generation{};
    std::string prompt{};  // the prompt text (logged only with log_prompts)
  };

  // One request on its way through the service.
  struct Call {
    Exchange& exchange;
    RouteMatch match;
    Clock::time_point arrival;
    RequestCount count;  // recorded right before the last write
  };

  // Steps 2 to 6; nullopt when the request may go on to its endpoint, else the status of
  // the reply sent.
  asio::awaitable<std::optional<int>> middleware(Call& call);
  // Steps 3-4, 5 and 6 as checks: the error that ends the request (headers such as
  // Retry-After or Allow already added), or nothing.
  std::optional<ApiError> check_access(Call& call);
  std::optional<ApiError> check_route(Call& call);
  std::optional<ApiError> check_admission(Call& call);
  asio::awaitable<Handled> dispatch(Call& call);

  // Endpoints (api_service_endpoints.cpp, api_service_info.cpp).
  asio::awaitable<Handled> chat_completions(Call& call);
  asio::awaitable<Handled> completions(Call& call);
  asio::awaitable<Handled> list_models(Call& call);
  asio::awaitable<Handled> get_model(Call& call);
  asio::awaitable<Handled> tokenize(Call& call);
  asio::awaitable<Handled> detokenize(Call& call);
  asio::awaitable<Handled> health(Call& call);
  asio::awaitable<Handled> metrics(Call& call);
  asio::awaitable<Handled> web_ui(Call& call);  // api_service_webui.cpp

  // A 404 unless `model` is empty or the served model's name.
  std::optional<ApiError> check_model(const std::string& model) const;
  // Counts the request, then sends the reply. Arguments by value: GCC 12 mishandles
  // temporaries bound to references across co_await, so callers pass named values, moved.
  asio::awaitable<Handled> respond_error(Call& call, ApiError error);
  asio::awaitable<Handled> respond(Call& call, http::status status, std::string body,
                                   std::string_view content_type = "application/json");
  GenerationServices generation_services(Call& call);
  // Compiles the request's output constraint (format, tools) into `sampling.grammar`;
  // the 400 of a format, schema or grammar that does not convert or compile.
  std::optional<ApiError> attach_grammar(const OutputFormat& format, const ToolsRequest* tools,
                                         engine::SamplingParams& sampling);
  ResponseContext response_context(std::string_view id_prefix,
                                   const GenerationOptions& options) const;
  void log_request(Call& call, const Handled& handled);

  engine::Engine& engine_;
  const tokenizer::Tokenizer& tokenizer_;
  ModelInfo model_;
  ApiServiceOptions options_;
  ServerMetrics& metrics_;
  PromptBuilder prompts_;
  GrammarCache grammars_;  // compiled grammars, shared by requests
  RateLimiter rate_limiter_;
  ActiveGenerations active_;
  std::atomic<bool> draining_{false};
};

}  // namespace pagoda::server
