#include "server/http_test_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <thread>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/parser.hpp>

namespace pagoda::server::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string TestResponse::header(const std::string& lower_case_name) const {
  const auto it = headers.find(lower_case_name);
  return it == headers.end() ? std::string() : it->second;
}

TestClient::TestClient(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    connect_error_ = errno;
    return;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) connect_error_ = errno;
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

TestClient::~TestClient() { close(); }

TestClient::TestClient(TestClient&& other) noexcept
    : fd_(other.fd_), connect_error_(other.connect_error_), closed_(other.closed_), pending_(std::move(other.pending_)) {
  other.fd_ = -1;
}

bool TestClient::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool TestClient::fill(std::chrono::milliseconds timeout) {
  if (closed_ || fd_ < 0) return false;
  pollfd entry{fd_, POLLIN, 0};
  if (::poll(&entry, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char buffer[16384];
  const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
  if (n <= 0) {
    closed_ = true;
    return false;
  }
  pending_.append(buffer, static_cast<std::size_t>(n));
  return true;
}

std::string TestClient::read_some(std::chrono::milliseconds timeout) {
  if (pending_.empty()) fill(timeout);
  return std::exchange(pending_, {});
}

std::optional<std::string> TestClient::read_until(std::string_view marker, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const std::size_t at = pending_.find(marker);
    if (at != std::string::npos) {
      std::string out = pending_.substr(0, at + marker.size());
      pending_.erase(0, at + marker.size());
      return out;
    }
    if (!fill(left_until(deadline))) return std::nullopt;
  }
}

std::optional<std::string> TestClient::read_chunk(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const auto size_line = read_until("\r\n", timeout);
  if (!size_line) return std::nullopt;
  const std::size_t size = std::stoul(*size_line, nullptr, 16);
  while (pending_.size() < size + 2) {
    if (!fill(left_until(deadline))) return std::nullopt;
  }
  if (pending_.compare(size, 2, "\r\n") != 0) return std::nullopt;
  std::string data = pending_.substr(0, size);
  pending_.erase(0, size + 2);
  return data;
}

std::optional<TestResponse> TestClient::read_response(std::chrono::milliseconds timeout, bool head_request) {
  namespace http = boost::beast::http;
  const auto deadline = Clock::now() + timeout;
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  parser.body_limit(boost::none);
  parser.skip(head_request);
  while (!parser.is_done()) {
    boost::beast::error_code error;
    if (!pending_.empty()) {
      const std::size_t used = parser.put(boost::asio::buffer(pending_), error);
      pending_.erase(0, used);
      if (error && error != http::error::need_more) return std::nullopt;
      if (parser.is_done() || (used > 0 && !pending_.empty())) continue;
    }
    if (!fill(left_until(deadline))) {
      if (!closed_ || !parser.got_some()) return std::nullopt;  // timed out, or closed before a reply
      parser.put_eof(error);                                     // a close-delimited body ends here
      if (error) return std::nullopt;
    }
  }
  TestResponse response;
  const auto& message = parser.get();
  response.status = static_cast<int>(message.result_int());
  response.version = message.version();
  for (const auto& field : message) response.headers[lower(field.name_string())] = std::string(field.value());
  response.body = message.body();
  response.keep_alive = message.keep_alive();
  response.chunked = message.chunked();
  return response;
}

bool TestClient::wait_closed(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!closed_) {
    pending_.clear();
    if (!fill(left_until(deadline)) && !closed_ && Clock::now() >= deadline) return false;
  }
  return true;
}

void TestClient::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

void TestClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void TestClient::reset() {
  const linger hard{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  close();
}

void TestClient::set_receive_buffer(int bytes) { ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes)); }

std::string get_request(std::string_view path, std::string_view extra_headers) {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: test\r\n" + std::string(extra_headers) + "\r\n";
}

std::string post_request(std::string_view path, std::string_view body, std::string_view extra_headers) {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" +
         "Content-Length: " + std::to_string(body.size()) + "\r\n" + std::string(extra_headers) + "\r\n" +
         std::string(body);
}

std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> payloads;
  size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const size_t end = body.find("\n\n", at);
    payloads.push_back(body.substr(at + 6, end - at - 6));
    at = end;
  }
  return payloads;
}

HttpServerOptions test_options() {
  HttpServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.io_threads = 2;
  options.idle_timeout = 2s;
  options.read_timeout = 2s;
  options.write_timeout = 2s;
  options.stop_timeout = 500ms;
  return options;
}

std::unique_ptr<HttpServer> start_server(Handler handler, HttpServerOptions options) {
  auto server = HttpServer::create(std::move(options), std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().message();
  if (!server.ok()) return nullptr;
  (*server)->start();
  return std::move(*server);
}

boost::asio::awaitable<bool> wait_until(std::function<bool()> done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  while (!done() && Clock::now() < deadline) {
    timer.expires_after(1ms);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
  co_return done();
}

boost::asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, duration);
  co_await timer.async_wait(boost::asio::use_awaitable);
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

}  // namespace pagoda::server::testing
