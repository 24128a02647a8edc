#pragma once
// The fixture step the ApiService tests share: a fresh ApiService behind a fresh test
// server that hands it every request.

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "server/http_test_client.h"
#include "server/service/api_service.h"
#include "tokenizer/chat_template.h"

namespace pagoda::server::testing {

// `service` over `engine` and `tokenizer` with the chat template parsed from
// `template_source`, and `server` started on it; fails the test (leaving `server` null)
// where either cannot be made. A server already in `server` is stopped first, so that no
// request reaches a service being replaced; the caller stops `server` before `service` goes.
inline void start_api_service(engine::Engine& engine, const tokenizer::Tokenizer& tokenizer, ModelInfo model,
                              std::string_view template_source, ApiServiceOptions options, ServerMetrics& metrics,
                              std::unique_ptr<ApiService>& service, std::unique_ptr<HttpServer>& server) {
  if (server) {
    server->stop();
    server.reset();
  }
  auto chat_template = tokenizer::ChatTemplate::parse(template_source);
  ASSERT_TRUE(chat_template.ok()) << chat_template.status().message();
  service = std::make_unique<ApiService>(engine, tokenizer, std::move(model), std::move(*chat_template),
                                         std::move(options), metrics);
  ApiService* handler = service.get();
  server = start_server([handler](Exchange& exchange) { return handler->handle(exchange); });
  ASSERT_NE(server, nullptr);
}

}  // namespace pagoda::server::testing
