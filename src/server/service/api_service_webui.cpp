// The chat page's files (webui/): public, like /health, so that a browser can load the
// page before the user has typed an API key.

#include <string>
#include <utility>

#include "server/service/api_service.h"
#include "server/webui/static_reply.h"

namespace pagoda::server {

asio::awaitable<ApiService::Handled> ApiService::web_ui(Call& call) {
  const HttpRequest& request = call.exchange.request();
  const auto accept_encoding = request[http::field::accept_encoding];
  const auto if_none_match = request[http::field::if_none_match];
  StaticReply reply = static_reply(*call.match.web_asset,
                                   {accept_encoding.data(), accept_encoding.size()},
                                   {if_none_match.data(), if_none_match.size()});
  for (auto& [name, value] : reply.headers) {
    call.exchange.add_header(std::move(name), std::move(value));
  }
  std::string body(reply.body);
  co_return co_await respond(call, static_cast<http::status>(reply.status), std::move(body),
                             reply.content_type);
}

}  // namespace pagoda::server
