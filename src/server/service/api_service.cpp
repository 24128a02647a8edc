#include "server/service/api_service.h"

#include <spdlog/spdlog.h>

#include <cstdint>
#include <span>
#include <utility>

#include "engine/grammar_vocab.h"
#include "server/logging/logging.h"

namespace pagoda::server {
namespace {

// Auth and the rate limit guard the OpenAI API, as vLLM's middleware does.
bool is_guarded_path(std::string_view path) {
  return path == "/v1" || path.starts_with("/v1/");
}

std::string_view header(const HttpRequest& request, http::field field) {
  const auto value = request[field];
  return {value.data(), value.size()};
}

// The client's address without its port: "[::1]:5000" -> "[::1]", "1.2.3.4:80" -> "1.2.3.4".
std::string_view address_without_port(std::string_view remote) {
  const size_t colon = remote.rfind(':');
  return colon == std::string_view::npos ? remote : remote.substr(0, colon);
}

// The metrics label of a request: its route, or "unmatched" for an unknown path (a
// client chooses paths; they must not become label values).
std::string_view metrics_label(const RouteMatch& match, std::string_view path) {
  if (match.endpoint) return endpoint_label(*match.endpoint);
  if (!match.path_exists) return "unmatched";
  return path.starts_with("/v1/models/") ? endpoint_label(Endpoint::kModel) : path;
}

}  // namespace

ApiService::ApiService(engine::Engine& engine, const tokenizer::Tokenizer& tokenizer,
                       ModelInfo model, tokenizer::ChatTemplate chat_template,
                       ApiServiceOptions options, ServerMetrics& metrics)
    : engine_(engine),
      tokenizer_(tokenizer),
      model_(std::move(model)),
      options_(std::move(options)),
      metrics_(metrics),
      prompts_(tokenizer, std::move(chat_template)),
      // Grammars are compiled against the vocabulary made at the first constrained
      // request (a server that never constrains an output never pays for it), with the
      // family's control-token call markers as text.
      grammars_(nullptr, options_.grammar_cache_size,
                [&tokenizer](std::span<const int32_t> markers) {
                  return engine::make_vocab_index(tokenizer, markers);
                },
                control_call_markers(tokenizer, prompts_.tool_family())),
      rate_limiter_(options_.rate_limit_rpm) {}

asio::awaitable<void> ApiService::handle(Exchange& exchange) {
  const HttpRequest& request = exchange.request();
  const std::string_view target(request.target().data(), request.target().size());
  RouteMatch match = route(request.method(), target,
                           {.web_ui = options_.web_ui, .metrics = options_.metrics,
                            .metrics_path = options_.metrics_path});
  const std::string_view label = metrics_label(match, target_path(target));
  Call call{exchange, std::move(match), Clock::now(), RequestCount(metrics_, label)};
  Handled handled;
  if (std::optional<int> refused = co_await middleware(call)) {
    handled.status = *refused;
  } else {
    handled = co_await dispatch(call);
  }
  call.count.record(handled.status);  // when the endpoint wrote nothing
  log_request(call, handled);
}

asio::awaitable<std::optional<int>> ApiService::middleware(Call& call) {
  std::optional<ApiError> refused;
  const HttpRequest& request = call.exchange.request();
  const std::string_view origin = header(request, http::field::origin);
  if (CorsPolicy::is_preflight(std::string_view(request.method_string()), origin,
                               header(request, http::field::access_control_request_method))) {
    HeaderList headers = options_.cors.preflight_headers(
        origin, header(request, http::field::access_control_request_headers));
    if (!headers.empty()) {
      for (auto& [name, value] : headers)
        call.exchange.add_header(std::move(name), std::move(value));
      const Handled answered = co_await respond(call, http::status::no_content, {}, "text/plain");
      co_return answered.status;
    }
    // With CORS on, a clear refusal (as Starlette's middleware); off, routing says 405.
    if (options_.cors.enabled())
      refused = bad_request("Disallowed CORS origin: " + std::string(origin));
  }
  for (auto& [name, value] : options_.cors.response_headers(origin)) {
    call.exchange.add_header(std::move(name), std::move(value));
  }
  if (!refused) refused = check_access(call);
  if (!refused) refused = check_route(call);
  if (!refused) refused = check_admission(call);
  if (!refused) co_return std::nullopt;
  const Handled handled = co_await respond_error(call, std::move(*refused));
  co_return handled.status;
}

std::optional<ApiError> ApiService::check_access(Call& call) {
  const HttpRequest& request = call.exchange.request();
  if (!is_guarded_path(target_path(std::string_view(request.target())))) return std::nullopt;
  std::string rate_key;
  if (options_.api_keys.enabled()) {
    const std::optional<size_t> key =
        options_.api_keys.check(header(request, http::field::authorization));
    if (!key) {
      return unauthorized(
          "Incorrect or missing API key: send 'Authorization: Bearer <key>' with a key this "
          "server accepts.");
    }
    rate_key = "key " + std::to_string(*key);
  } else {
    rate_key = "address " + std::string(address_without_port(call.exchange.remote_address()));
  }
  if (!rate_limiter_.enabled()) return std::nullopt;
  const RateLimitDecision decision = rate_limiter_.try_acquire(rate_key);
  if (decision.allowed) return std::nullopt;
  call.exchange.add_header("Retry-After", std::to_string(decision.retry_after_header()));
  return rate_limited("Rate limit reached: at most " + std::to_string(options_.rate_limit_rpm) +
                      " requests per minute. Try again later.");
}

std::optional<ApiError> ApiService::check_route(Call& call) {
  if (call.match.endpoint) return std::nullopt;
  const HttpRequest& request = call.exchange.request();
  const std::string_view method(request.method_string());
  const std::string_view target(request.target());
  if (!call.match.path_exists) return unknown_url(method, target);
  call.exchange.add_header("Allow", std::string(call.match.allow));
  return method_not_allowed(method, target);
}

std::optional<ApiError> ApiService::check_admission(Call& call) {
  if (*call.match.endpoint != Endpoint::kChatCompletions &&
      *call.match.endpoint != Endpoint::kCompletions) {
    return std::nullopt;
  }
  std::optional<ApiError> refused;
  if (draining_) {
    refused = service_unavailable("The server is shutting down.");
  } else if (options_.max_queued > 0 && engine_.stats().n_waiting >= options_.max_queued) {
    // The engine's count is as of its last step, so requests arriving within one step may
    // overshoot max_queued by a few; nothing is ever half-started.
    refused = service_unavailable("The server is busy: " + std::to_string(options_.max_queued) +
                                  " requests are already waiting. Try again later.");
  }
  if (refused)
    call.exchange.add_header("Retry-After", std::to_string(options_.retry_after_seconds));
  return refused;
}

asio::awaitable<ApiService::Handled> ApiService::dispatch(Call& call) {
  switch (*call.match.endpoint) {
    case Endpoint::kChatCompletions:
      co_return co_await chat_completions(call);
    case Endpoint::kCompletions:
      co_return co_await completions(call);
    case Endpoint::kModels:
      co_return co_await list_models(call);
    case Endpoint::kModel:
      co_return co_await get_model(call);
    case Endpoint::kTokenize:
      co_return co_await tokenize(call);
    case Endpoint::kDetokenize:
      co_return co_await detokenize(call);
    case Endpoint::kHealth:
      co_return co_await health(call);
    case Endpoint::kMetrics:
      co_return co_await metrics(call);
    case Endpoint::kWebUi:
      co_return co_await web_ui(call);
  }
  ApiError error = internal_error("no handler for this route");
  co_return co_await respond_error(call, std::move(error));
}

asio::awaitable<ApiService::Handled> ApiService::respond_error(Call& call, ApiError error) {
  std::string body = error_body(error);
  co_return co_await respond(call, static_cast<http::status>(error.status), std::move(body));
}

asio::awaitable<ApiService::Handled> ApiService::respond(Call& call, http::status status,
                                                         std::string body,
                                                         std::string_view content_type) {
  call.count.record(static_cast<int>(status));
  co_await call.exchange.respond(status, std::move(body), content_type);
  co_return Handled{.status = static_cast<int>(status)};
}

std::optional<ApiError> ApiService::check_model(const std::string& model) const {
  if (model.empty() || model == model_.name) return std::nullopt;
  return model_not_found(model);
}

GenerationServices ApiService::generation_services(Call& call) {
  return GenerationServices{
      .engine = &engine_, .metrics = &metrics_, .active = &active_, .count = &call.count};
}

void ApiService::log_request(Call& call, const Handled& handled) {
  const Exchange& exchange = call.exchange;
  const HttpRequest& request = exchange.request();
  const std::string_view target(request.target().data(), request.target().size());
  AccessRecord record;
  record.request_id = std::string(exchange.request_id());
  record.method = std::string(request.method_string());
  record.path = std::string(target);
  record.status = handled.status;
  record.remote = std::string(exchange.remote_address());
  if (handled.generation) {
    record.prompt_tokens = handled.generation->prompt_tokens;
    record.completion_tokens = handled.generation->completion_tokens;
    if (handled.generation->ttft_seconds >= 0.0)
      record.ttft_seconds = handled.generation->ttft_seconds;
    if (handled.generation->proposed_tokens > 0) {
      record.proposed_tokens = handled.generation->proposed_tokens;
      record.accepted_tokens = handled.generation->accepted_tokens;
    }
  }
  record.latency_seconds = std::chrono::duration<double>(Clock::now() - call.arrival).count();
  record.bytes_sent = exchange.bytes_sent();
  if (options_.log_prompts) record.prompt = handled.prompt;
  log_access(record);
}

}  // namespace pagoda::server
