// The endpoints that run no generation: /v1/models, /v1/models/{id}, /tokenize,
// /detokenize, /health, /metrics.

#include <utility>
#include <vector>

#include "server/metrics/metrics_process.h"
#include "server/openai/tokenize_api.h"
#include "server/service/api_service.h"

namespace pagoda::server {
namespace {

constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

asio::awaitable<ApiService::Handled> ApiService::list_models(Call& call) {
  const ModelCard card{
      .id = model_.name, .created = model_.created, .max_model_len = model_.max_model_len};
  std::string body = models_body(std::span(&card, 1));
  co_return co_await respond(call, http::status::ok, std::move(body));
}

asio::awaitable<ApiService::Handled> ApiService::get_model(Call& call) {
  const std::string& id = call.match.model_id;
  if (id != model_.name) {
    ApiError error = model_not_found(id);
    co_return co_await respond_error(call, std::move(error));
  }
  const ModelCard card{
      .id = model_.name, .created = model_.created, .max_model_len = model_.max_model_len};
  std::string body = model_body(card);
  co_return co_await respond(call, http::status::ok, std::move(body));
}

asio::awaitable<ApiService::Handled> ApiService::tokenize(Call& call) {
  ApiResult<TokenizeRequest> parsed = parse_tokenize_request(call.exchange.request().body());
  if (!parsed) co_return co_await respond_error(call, std::move(parsed).error());
  const TokenizeRequest& request = *parsed;
  if (std::optional<ApiError> refused = check_model(request.model)) {
    co_return co_await respond_error(call, std::move(*refused));
  }
  std::vector<int32_t> tokens;
  if (request.prompt) {
    tokens = prompts_.tokenize_text(*request.prompt, request.add_special_tokens);
  } else {
    ApiResult<std::string> rendered = prompts_.render_chat(
        request.messages, request.add_generation_prompt, request.chat_template_kwargs);
    if (!rendered) co_return co_await respond_error(call, std::move(rendered).error());
    // The tokens a chat completion would run (BOS as there), unless the client asks for
    // the vocabulary's special tokens on top.
    tokens = request.add_special_tokens ? prompts_.tokenize_text(*rendered, true)
                                        : prompts_.tokenize_chat(*rendered);
  }
  std::vector<std::string> token_strs;
  if (request.return_token_strs) {
    for (const int32_t token : tokens) token_strs.emplace_back(tokenizer_.token_text(token));
  }
  std::vector<std::string> pieces;
  if (request.with_pieces) {
    for (const int32_t token : tokens) pieces.emplace_back(tokenizer_.token_to_piece(token, /*special=*/true));
  }
  std::string body = tokenize_body(tokens, model_.max_model_len,
                                   request.return_token_strs ? &token_strs : nullptr,
                                   request.with_pieces ? &pieces : nullptr);
  co_return co_await respond(call, http::status::ok, std::move(body));
}

asio::awaitable<ApiService::Handled> ApiService::detokenize(Call& call) {
  ApiResult<DetokenizeRequest> parsed =
      parse_detokenize_request(call.exchange.request().body(), tokenizer_.n_vocab());
  if (!parsed) co_return co_await respond_error(call, std::move(parsed).error());
  if (std::optional<ApiError> refused = check_model(parsed->model)) {
    co_return co_await respond_error(call, std::move(*refused));
  }
  // As vLLM: special tokens are shown ("<s> Hello").
  const std::string text = tokenizer_.decode(parsed->tokens, {.special = true});
  std::string body = detokenize_body(text);
  co_return co_await respond(call, http::status::ok, std::move(body));
}

asio::awaitable<ApiService::Handled> ApiService::health(Call& call) {
  HealthInputs inputs;
  inputs.state = draining_ ? ServerState::kDraining : ServerState::kReady;
  inputs.model = model_.name;
  inputs.uptime_seconds = std::chrono::duration<double>(Clock::now() - options_.started).count();
  inputs.requests_served = metrics_.requests_served();
  inputs.stats = engine_.stats();
  if (const std::optional<ProcessMemory> memory = read_process_memory()) {
    inputs.rss_bytes = memory->resident_bytes;
  }
  HealthReport report = health_report(inputs);
  co_return co_await respond(call, static_cast<http::status>(report.http_status),
                             std::move(report.body));
}

asio::awaitable<ApiService::Handled> ApiService::metrics(Call& call) {
  std::string body = metrics_.render(engine_.stats());
  co_return co_await respond(call, http::status::ok, std::move(body), kPrometheusContentType);
}

}  // namespace pagoda::server
