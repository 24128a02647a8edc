#include "loadgen/http_client.h"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace pagoda::loadgen {
namespace {

namespace http = beast::http;
using tcp = asio::ip::tcp;

// Completion token that hands errors back as values instead of throwing them.
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

constexpr size_t kReadChunkBytes = 16 * 1024;

std::string error_text(const beast::error_code& error) {
  if (error == beast::error::timeout) return "timed out";
  return error.message();
}

// The server closed a kept-alive connection while it sat idle: sending on it fails
// or the read sees the end before any response byte.
bool is_stale_connection_error(const beast::error_code& error) {
  return error == http::error::end_of_stream || error == asio::error::eof ||
         error == asio::error::connection_reset || error == asio::error::broken_pipe;
}

// Reads the rest of a response whose head `parser` has, handing each run of body
// bytes to `callbacks.on_body` as it arrives. A transport error is returned; a
// callback's error stops the read and lands in `callback_status`.
asio::awaitable<beast::error_code> read_body(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                             http::response_parser<http::buffer_body>& parser,
                                             const ResponseCallbacks& callbacks,
                                             Status& callback_status) {
  std::array<char, kReadChunkBytes> chunk;
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    auto [error, n] = co_await http::async_read_some(stream, buffer, parser, kNoThrow);
    if (error && error != http::error::need_buffer) co_return error;
    const size_t got = chunk.size() - parser.get().body().size;
    if (got == 0 || !callbacks.on_body) continue;
    callback_status = callbacks.on_body(std::string_view(chunk.data(), got));
    if (!callback_status.ok()) break;
  }
  co_return beast::error_code{};
}

}  // namespace

struct HttpClient::ExchangeResult {
  Status status;
  beast::error_code transport_error;
  bool response_started = false;  // some byte of a response arrived
  bool keep_alive = false;        // the connection can carry another request
};

HttpClient::HttpClient(asio::any_io_executor executor, ServerUrl url, std::string api_key)
    : executor_(std::move(executor)), url_(std::move(url)) {
  if (!api_key.empty()) authorization_ = "Bearer " + api_key;
}

HttpClient::~HttpClient() {
  for (auto& connection : idle_) {
    beast::error_code ignored;
    connection->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
}

std::string HttpClient::describe(const HttpRequestSpec& request) const {
  return std::string(http::to_string(request.method)) + " " + url_.to_string() +
         request.target.substr(url_.path_prefix.size());
}

asio::awaitable<Expected<std::unique_ptr<HttpClient::Connection>>> HttpClient::open_connection(
    Clock::time_point deadline) {
  if (endpoints_.empty()) {
    tcp::resolver resolver(executor_);
    auto [error, results] =
        co_await resolver.async_resolve(url_.host, std::to_string(url_.port), kNoThrow);
    if (error) co_return io_error("cannot resolve '" + url_.host + "': " + error_text(error));
    if (endpoints_.empty()) {  // another request may have resolved meanwhile
      for (const auto& entry : results) endpoints_.push_back(entry.endpoint());
    }
  }
  auto connection = std::make_unique<Connection>(executor_);
  connection->stream.expires_at(deadline);
  auto [error, endpoint] = co_await connection->stream.async_connect(endpoints_, kNoThrow);
  if (error)
    co_return io_error("cannot connect to " + url_.host_header() + ": " + error_text(error));
  beast::error_code ignored;  // latency matters more than packet count here
  connection->stream.socket().set_option(tcp::no_delay(true), ignored);
  ++connections_opened_;
  co_return std::move(connection);
}

http::request<http::string_body> HttpClient::make_request(const HttpRequestSpec& spec) const {
  http::request<http::string_body> request{spec.method, spec.target, 11};
  request.set(http::field::host, url_.host_header());
  request.set(http::field::user_agent, "pagoda-bench-serve");
  request.set(http::field::accept, spec.accept);
  if (!authorization_.empty()) request.set(http::field::authorization, authorization_);
  if (!spec.body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = spec.body;
  }
  request.keep_alive(true);
  request.prepare_payload();
  return request;
}

asio::awaitable<HttpClient::ExchangeResult> HttpClient::exchange(
    Connection& connection, const HttpRequestSpec& spec, Clock::time_point deadline,
    const ResponseCallbacks& callbacks) {
  ExchangeResult result;
  auto fail = [&](const beast::error_code& error, std::string_view during) {
    result.transport_error = error;
    result.status =
        io_error(describe(spec) + ": " + std::string(during) + ": " + error_text(error));
  };
  const http::request<http::string_body> request = make_request(spec);
  connection.stream.expires_at(deadline);
  if (auto [error, n] = co_await http::async_write(connection.stream, request, kNoThrow); error) {
    fail(error, "sending the request");
    co_return result;
  }
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);  // the body streams through callbacks, never stored here
  auto [head_error, head_bytes] =
      co_await http::async_read_header(connection.stream, connection.buffer, parser, kNoThrow);
  result.response_started = parser.got_some();
  if (head_error) {
    fail(head_error, "reading the response head");
    co_return result;
  }
  const auto& head = parser.get();
  if (callbacks.on_head) callbacks.on_head(head.result_int(), head[http::field::content_type]);
  Status callback_status;
  const beast::error_code body_error =
      co_await read_body(connection.stream, connection.buffer, parser, callbacks, callback_status);
  if (body_error)
    fail(body_error, "reading the response body");
  else if (!callback_status.ok())
    result.status = std::move(callback_status);
  else
    result.keep_alive = parser.keep_alive();
  co_return result;
}

asio::awaitable<Status> HttpClient::stream(const HttpRequestSpec& request,
                                           Clock::time_point deadline,
                                           const ResponseCallbacks& callbacks) {
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> connection;
    const bool reused = attempt == 0 && !idle_.empty();  // a retry takes a new connection
    if (reused) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    } else {
      auto opened = co_await open_connection(deadline);
      if (!opened.ok())
        co_return Status(opened.status().code(),
                         describe(request) + ": " + opened.status().message());
      connection = std::move(opened).value();
    }
    ExchangeResult result = co_await exchange(*connection, request, deadline, callbacks);
    if (result.status.ok()) {
      if (result.keep_alive) {
        connection->stream.expires_never();
        idle_.push_back(std::move(connection));
      }
      co_return Status::ok_status();
    }
    const bool retry =
        reused && !result.response_started && is_stale_connection_error(result.transport_error);
    if (!retry) co_return result.status;
  }
}

asio::awaitable<Expected<HttpResponse>> HttpClient::fetch(const HttpRequestSpec& request,
                                                          Clock::time_point deadline,
                                                          size_t max_body_bytes) {
  HttpResponse response;
  ResponseCallbacks callbacks;
  callbacks.on_head = [&](int status, std::string_view content_type) {
    response.status = status;
    response.content_type = std::string(content_type);
    response.body.clear();  // a retried request starts over
  };
  callbacks.on_body = [&](std::string_view bytes) -> Status {
    if (response.body.size() + bytes.size() > max_body_bytes)
      return invalid_argument(describe(request) + ": response body over " +
                              std::to_string(max_body_bytes) + " bytes");
    response.body.append(bytes);
    return Status::ok_status();
  };
  Status status = co_await stream(request, deadline, callbacks);
  if (!status.ok()) co_return status;
  co_return response;
}

}  // namespace pagoda::loadgen
