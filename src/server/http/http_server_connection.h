#pragma once
// The transport's side of one TCP connection (internal to http_server.cpp and
// http_exchange.cpp): a coroutine on the connection's own strand that reads requests,
// runs the handler for each while watching the socket, writes replies, and applies the
// timeouts and limits of HttpServerOptions.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>

#include "server/http/http_server.h"
#include "server/http/http_server_protocol.h"

namespace pagoda::server {

namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;
using TcpSocket = asio::basic_stream_socket<tcp, Strand>;
using TcpStream = beast::basic_stream<tcp, Strand>;

class HttpConnection;

// What the server and its connections share; outlives both (held by shared_ptr).
struct HttpServerState {
  HttpServerState(HttpServerOptions options_in, Handler handler_in)
      : options(std::move(options_in)), handler(std::move(handler_in)) {}

  void add(const std::shared_ptr<HttpConnection>& connection);
  void remove(HttpConnection* connection);
  std::vector<std::shared_ptr<HttpConnection>> connections_snapshot();
  // Waits until no connection is left or `timeout` passed; returns whether none is left.
  bool wait_until_all_closed(std::chrono::milliseconds timeout);

  const HttpServerOptions options;
  const Handler handler;
  std::atomic<std::size_t> open_connections{0};
  std::atomic<std::size_t> active_exchanges{0};
  std::atomic<bool> draining{false};  // stop_accepting() was called

 private:
  std::mutex mutex_;
  std::condition_variable all_closed_;
  std::unordered_map<HttpConnection*, std::weak_ptr<HttpConnection>> connections_;
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(std::shared_ptr<HttpServerState> state, TcpSocket socket);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Registers the connection and runs it on its strand until it closes.
  static void launch(const std::shared_ptr<HttpConnection>& connection);

  // Any thread (each posts to the strand):
  void close_if_idle();  // between requests: close now; else close after this reply
  void abort();          // the server stops: client gone for the handler, close, cancel

  // For Exchange, on the strand. Each write is bounded by the write timeout and never
  // throws; `ok` false: the client is gone (the socket is then closed).
  struct WriteResult {
    bool ok = false;
    std::size_t bytes = 0;
  };
  asio::awaitable<WriteResult> write_response(http::response<http::string_body>& response,
                                              bool head_only);
  asio::awaitable<WriteResult> write_stream_head(http::response<http::empty_body>& head);
  asio::awaitable<WriteResult> write_bytes(std::string_view bytes);
  const std::string& remote_address() const { return remote_address_; }
  asio::any_io_executor executor() { return stream_.get_executor(); }
  bool draining() const { return state_->draining.load(std::memory_order_relaxed); }

 private:
  enum class Phase { kIdle, kReading, kHandling, kClosing };
  enum class ReadOutcome { kRequest, kRejected, kClosed };

  asio::awaitable<void> run();
  asio::awaitable<ReadOutcome> read_request(bool first);
  asio::awaitable<ReadOutcome> read_request_head(std::chrono::steady_clock::time_point deadline);
  ReadOutcome read_failed(const beast::error_code& error);
  asio::awaitable<void> send_rejection();
  // Runs one exchange; returns whether the connection may carry another request.
  asio::awaitable<bool> serve_request();
  asio::awaitable<void> run_handler(Exchange& exchange);
  asio::awaitable<void> watch_peer(Exchange& exchange);
  void abort_now();

  std::shared_ptr<HttpServerState> state_;
  TcpStream stream_;
  beast::flat_buffer buffer_;  // bytes read and not yet parsed (pipelined requests)
  std::optional<HttpRequestParser> parser_;
  std::optional<ApiError> rejection_;       // why read_request returned kRejected
  std::string remote_address_;
  std::chrono::steady_clock::time_point accepted_at_;
  asio::cancellation_signal cancel_;  // stops run() and whatever the handler awaits
  Phase phase_ = Phase::kReading;
  Exchange* exchange_ = nullptr;  // the exchange whose handler runs now
  bool keep_after_exchange_ = false;
  bool aborted_ = false;
};

// Answers a connection over max_connections with a 503 (Retry-After: 1) and closes it.
asio::awaitable<void> reject_overloaded(TcpSocket socket, std::chrono::milliseconds write_timeout);

}  // namespace pagoda::server
