#include "loadgen/server_queries.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "loadgen/http_client.h"
#include "loadgen/openai_stream.h"

namespace pagoda::loadgen {
namespace {

namespace http = beast::http;
using Json = nlohmann::json;

// Runs `make(client)`'s coroutine to its end on a private io_context.
template <typename T, typename MakeCoroutine>
T run_blocking(const ServerTarget& server, MakeCoroutine make) {
  asio::io_context io(1);
  HttpClient client(io.get_executor(), server.url, server.api_key);
  std::optional<T> result;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { result.emplace(co_await make(client)); },
      asio::detached);
  io.run();
  if (!result) return internal_error("a request to the server ended without a result");
  return std::move(*result);
}

Status http_error(const std::string& what, const HttpResponse& response) {
  const ErrorCode code = response.status == 404 || response.status == 405 || response.status == 501
                             ? ErrorCode::kNotFound
                             : ErrorCode::kInvalidArgument;
  return Status(code, what + ": HTTP " + std::to_string(response.status) + ": " +
                          error_message_of_body(response.body));
}

// The JSON object of a 200 response; `what` names the request in errors.
Expected<Json> json_body(const std::string& what, const HttpResponse& response) {
  if (response.status != 200) return http_error(what, response);
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object())
    return invalid_argument(what + ": the response is not a JSON object");
  return body;
}

asio::awaitable<Expected<std::string>> fetch_first_model(HttpClient& client,
                                                         std::chrono::milliseconds timeout) {
  HttpRequestSpec request;
  request.target = client.url().target("/v1/models");
  auto response = co_await client.fetch(request, Clock::now() + timeout);
  if (!response.ok()) co_return response.status();
  auto body = json_body(client.describe(request), *response);
  if (!body.ok()) co_return body.status();
  const auto data = body->find("data");
  if (data == body->end() || !data->is_array() || data->empty() || !data->front().is_object() ||
      !data->front().contains("id") || !data->front()["id"].is_string())
    co_return not_found(client.describe(request) + " lists no model; give one with --model");
  co_return data->front()["id"].get<std::string>();
}

// The field names a server's /tokenize takes: "prompt" + "add_special_tokens" (Pagoda,
// vLLM) or "content" + "add_special" (llama-server). Pagoda refuses a body with both, so
// each request sends one set: the first, then the second where the server answers the
// first with a 4xx; the set that worked is kept for the texts after it.
enum class TokenizeFields { kUnknown, kPrompt, kContent };

std::string tokenize_body(const std::string& text, TokenizeFields fields) {
  const Json body = fields == TokenizeFields::kContent
                        ? Json{{"content", text}, {"add_special", false}}
                        : Json{{"prompt", text}, {"add_special_tokens", false}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

asio::awaitable<Expected<int32_t>> fetch_token_count(HttpClient& client, const std::string& text,
                                                     TokenizeFields fields, std::chrono::milliseconds timeout) {
  HttpRequestSpec request;
  request.method = http::verb::post;
  request.target = client.url().target("/tokenize");
  request.body = tokenize_body(text, fields);
  auto response = co_await client.fetch(request, Clock::now() + timeout);
  if (!response.ok()) co_return response.status();
  auto body = json_body(client.describe(request), *response);
  if (!body.ok()) co_return body.status();
  const auto tokens = body->find("tokens");
  if (tokens == body->end() || !tokens->is_array())
    co_return invalid_argument(client.describe(request) + ": the response has no \"tokens\" array");
  co_return static_cast<int32_t>(tokens->size());
}

// fetch_token_count with the field names `fields` says, or, while they are unknown,
// each set in turn (a refusal of the first other than 404 tries the second).
asio::awaitable<Expected<int32_t>> count_tokens(HttpClient& client, const std::string& text,
                                                TokenizeFields& fields, std::chrono::milliseconds timeout) {
  if (fields != TokenizeFields::kUnknown) co_return co_await fetch_token_count(client, text, fields, timeout);
  auto count = co_await fetch_token_count(client, text, TokenizeFields::kPrompt, timeout);
  if (count.ok()) {
    fields = TokenizeFields::kPrompt;
    co_return count;
  }
  if (count.status().code() != ErrorCode::kInvalidArgument) co_return count;
  auto second = co_await fetch_token_count(client, text, TokenizeFields::kContent, timeout);
  if (!second.ok()) co_return count;  // the first set's refusal says more
  fields = TokenizeFields::kContent;
  co_return second;
}

}  // namespace

Expected<std::string> first_model_id(const ServerTarget& server,
                                     std::chrono::milliseconds timeout) {
  return run_blocking<Expected<std::string>>(
      server, [timeout](HttpClient& client) { return fetch_first_model(client, timeout); });
}

Expected<std::vector<int32_t>> tokenize_counts(const ServerTarget& server,
                                               const std::vector<std::string>& texts,
                                               std::chrono::milliseconds timeout, size_t parallel) {
  asio::io_context io(1);
  HttpClient client(io.get_executor(), server.url, server.api_key);
  std::vector<int32_t> counts(texts.size(), 0);
  Status first_error;
  size_t next = 0;
  TokenizeFields fields = TokenizeFields::kUnknown;  // the workers share one io thread
  // `parallel` workers take texts in turn until all are counted or one fails.
  auto worker = [&]() -> asio::awaitable<void> {
    while (next < texts.size() && first_error.ok()) {
      const size_t index = next++;
      auto count = co_await count_tokens(client, texts[index], fields, timeout);
      if (!count.ok()) {
        if (first_error.ok()) first_error = count.status();
        co_return;
      }
      counts[index] = *count;
    }
  };
  for (size_t i = 0; i < std::max<size_t>(parallel, 1); ++i)
    asio::co_spawn(io, worker, asio::detached);
  io.run();
  if (!first_error.ok()) return first_error;
  return counts;
}

}  // namespace pagoda::loadgen
