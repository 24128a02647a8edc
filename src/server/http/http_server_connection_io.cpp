#include "server/http/http_server_connection_io.h"

#include <algorithm>
#include <array>
#include <ctime>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

namespace pagoda::server {
namespace {

constexpr auto kAwaitTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds kMaxLingerTime{1000};
constexpr std::size_t kMaxLingerBytes = 1 << 20;

}  // namespace

http::response<http::string_body> error_response(const ApiError& error, unsigned version,
                                                 const std::string& request_id) {
  http::response<http::string_body> response{static_cast<http::status>(error.status), version};
  response.set(http::field::server, "pagoda");
  response.set(http::field::date, http_date(std::time(nullptr)));
  response.set("X-Request-Id", request_id);
  response.set(http::field::content_type, "application/json");
  response.body() = error_body(error);
  response.keep_alive(false);
  response.prepare_payload();
  return response;
}

asio::awaitable<void> close_gracefully(TcpStream& stream, std::chrono::milliseconds read_timeout) {
  beast::error_code error;
  stream.socket().shutdown(tcp::socket::shutdown_send, error);
  if (!error) {
    stream.expires_after(std::min(kMaxLingerTime, read_timeout));
    std::array<char, 4096> scratch;
    for (std::size_t drained = 0; drained < kMaxLingerBytes;) {
      const auto [read_error, n] = co_await stream.async_read_some(asio::buffer(scratch), kAwaitTuple);
      if (read_error) break;
      drained += n;
    }
  }
  stream.close();
}

asio::awaitable<void> reject_overloaded(TcpSocket socket, std::chrono::milliseconds write_timeout) {
  constexpr std::chrono::milliseconds kRejectTimeout{1000};
  TcpStream stream(std::move(socket));
  auto response = error_response(service_unavailable("The server has too many open connections; retry later."),
                                 11, make_request_id());
  response.set(http::field::retry_after, "1");
  stream.expires_after(std::min(write_timeout, kRejectTimeout));
  const auto [error, n] = co_await http::async_write(stream, response, kAwaitTuple);
  if (!error) co_await close_gracefully(stream, kRejectTimeout);
}

asio::awaitable<HttpConnection::WriteResult> HttpConnection::write_response(
    http::response<http::string_body>& response, bool head_only) {
  if (aborted_) co_return WriteResult{};
  try {
    stream_.expires_after(state_->options.write_timeout);
    if (head_only) {
      http::response_serializer<http::string_body> serializer(response);
      const auto [error, n] = co_await http::async_write_header(stream_, serializer, kAwaitTuple);
      co_return WriteResult{!error, n};
    }
    const auto [error, n] = co_await http::async_write(stream_, response, kAwaitTuple);
    co_return WriteResult{!error, n};
  } catch (const boost::system::system_error&) {  // the server's stop cancelled the write
    co_return WriteResult{};
  }
}

asio::awaitable<HttpConnection::WriteResult> HttpConnection::write_stream_head(
    http::response<http::empty_body>& head) {
  if (aborted_) co_return WriteResult{};
  try {
    stream_.expires_after(state_->options.write_timeout);
    http::response_serializer<http::empty_body> serializer(head);
    const auto [error, n] = co_await http::async_write_header(stream_, serializer, kAwaitTuple);
    co_return WriteResult{!error, n};
  } catch (const boost::system::system_error&) {
    co_return WriteResult{};
  }
}

asio::awaitable<HttpConnection::WriteResult> HttpConnection::write_bytes(std::string_view bytes) {
  if (aborted_) co_return WriteResult{};
  try {
    stream_.expires_after(state_->options.write_timeout);
    const auto [error, n] = co_await asio::async_write(stream_, asio::buffer(bytes), kAwaitTuple);
    co_return WriteResult{!error, n};
  } catch (const boost::system::system_error&) {
    co_return WriteResult{};
  }
}

}  // namespace pagoda::server
