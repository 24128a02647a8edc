#pragma once
// An asynchronous HTTP/1.1 client for one server, on Boost.Beast and Asio C++20
// coroutines. Responses are read as their bytes arrive, so a streamed (server-sent
// events) body can be timed chunk by chunk. Connections are kept alive and reused:
// a request takes an idle connection or opens one, and gives it back when the
// response ended cleanly and the server allows keep-alive.
//
// Not thread-safe: a client and every coroutine using it run on one executor (one
// io_context thread serves hundreds of concurrent streams).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "loadgen/server_url.h"

namespace pagoda::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
using Clock = std::chrono::steady_clock;

struct HttpRequestSpec {
  beast::http::verb method = beast::http::verb::get;
  std::string target;  // "/v1/completions", already prefixed
  std::string body;    // sent with Content-Type: application/json when not empty
  std::string accept = "application/json";
};

// What a streamed exchange reports as it goes. on_body gets each run of body bytes
// as read (chunked encoding removed); an error Status from it stops the read and
// drops the connection, and is what stream() returns.
struct ResponseCallbacks {
  std::function<void(int status, std::string_view content_type)> on_head;
  std::function<Status(std::string_view bytes)> on_body;
};

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

class HttpClient {
 public:
  // `api_key`, when not empty, goes out as "Authorization: Bearer <key>".
  HttpClient(asio::any_io_executor executor, ServerUrl url, std::string api_key);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` and reads the whole response through `callbacks`, all before
  // `deadline` (past it: an error saying so). Transport failures are errors; any HTTP
  // status is a success of this call. A reused connection that the server had closed
  // while idle is retried once on a new one, when no byte of a response came back.
  asio::awaitable<Status> stream(const HttpRequestSpec& request, Clock::time_point deadline,
                                 const ResponseCallbacks& callbacks);

  // stream() collecting the body, up to `max_body_bytes`.
  asio::awaitable<Expected<HttpResponse>> fetch(const HttpRequestSpec& request,
                                                Clock::time_point deadline,
                                                size_t max_body_bytes = 64u << 20);

  const ServerUrl& url() const { return url_; }
  // "POST http://host:port/v1/completions", for messages.
  std::string describe(const HttpRequestSpec& request) const;
  size_t connections_opened() const { return connections_opened_; }
  size_t idle_connections() const { return idle_.size(); }

 private:
  struct Connection {
    explicit Connection(asio::any_io_executor executor) : stream(std::move(executor)) {}
    beast::tcp_stream stream;
    beast::flat_buffer buffer;  // bytes read past the previous response
  };
  struct ExchangeResult;

  asio::awaitable<Expected<std::unique_ptr<Connection>>> open_connection(
      Clock::time_point deadline);
  asio::awaitable<ExchangeResult> exchange(Connection& connection, const HttpRequestSpec& request,
                                           Clock::time_point deadline,
                                           const ResponseCallbacks& callbacks);
  beast::http::request<beast::http::string_body> make_request(const HttpRequestSpec& spec) const;

  asio::any_io_executor executor_;
  ServerUrl url_;
  std::string authorization_;                       // "Bearer <key>" or empty
  std::vector<asio::ip::tcp::endpoint> endpoints_;  // resolved on first use
  std::vector<std::unique_ptr<Connection>> idle_;   // kept-alive connections, LIFO
  size_t connections_opened_ = 0;
};

}  // namespace pagoda::loadgen
