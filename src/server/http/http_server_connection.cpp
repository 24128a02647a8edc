#include "server/http/http_server_connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

#include "server/http/http_server_connection_io.h"

namespace pagoda::server {
namespace {

using asio::experimental::awaitable_operators::operator||;
constexpr auto kAwaitTuple = asio::as_tuple(asio::use_awaitable);

// While a handler runs, the socket is read to notice a client that leaves; bytes of the
// next pipelined requests are kept, up to this many, after which reading pauses until
// the handler is done (TCP flow control then holds the client back).
constexpr std::size_t kMaxPipelinedBytes = 64 << 10;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string format_endpoint(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  std::string text;
  if (address.is_v6()) text += '[';
  text += address.to_string();
  if (address.is_v6()) text += ']';
  text += ':';
  text += std::to_string(endpoint.port());
  return text;
}

std::string peer_address(const TcpSocket& socket) {
  beast::error_code error;
  const auto endpoint = socket.remote_endpoint(error);
  return error ? std::string("unknown") : format_endpoint(endpoint);
}

// Keeps active_exchanges and the connection's current exchange right however the
// exchange ends (a cancelled coroutine unwinds by exception).
class ActiveExchange {
 public:
  ActiveExchange(std::atomic<std::size_t>& counter, Exchange*& current, Exchange& exchange)
      : counter_(counter), current_(current) {
    counter_.fetch_add(1, std::memory_order_relaxed);
    current_ = &exchange;
  }
  ~ActiveExchange() {
    current_ = nullptr;
    counter_.fetch_sub(1, std::memory_order_relaxed);
  }
  ActiveExchange(const ActiveExchange&) = delete;
  ActiveExchange& operator=(const ActiveExchange&) = delete;

 private:
  std::atomic<std::size_t>& counter_;
  Exchange*& current_;
};

}  // namespace

HttpConnection::HttpConnection(std::shared_ptr<HttpServerState> state, TcpSocket socket)
    : state_(std::move(state)),
      stream_(std::move(socket)),
      remote_address_(peer_address(stream_.socket())),
      accepted_at_(std::chrono::steady_clock::now()) {
  state_->open_connections.fetch_add(1, std::memory_order_relaxed);
  beast::error_code ignored;
  stream_.socket().set_option(tcp::no_delay(true), ignored);  // each SSE event leaves at once
}

HttpConnection::~HttpConnection() {
  state_->open_connections.fetch_sub(1, std::memory_order_relaxed);
  state_->remove(this);
}

void HttpConnection::launch(const std::shared_ptr<HttpConnection>& connection) {
  connection->state_->add(connection);
  HttpConnection& self = *connection;
  asio::co_spawn(self.stream_.get_executor(), self.run(),
                 asio::bind_cancellation_slot(self.cancel_.slot(), [connection](std::exception_ptr error) {
                   if (!error) return;
                   try {
                     std::rethrow_exception(error);
                   } catch (const boost::system::system_error& e) {
                     if (e.code() != asio::error::operation_aborted) {
                       spdlog::warn("http {}: connection ended: {}", connection->remote_address_, e.what());
                     }
                   } catch (const std::exception& e) {
                     spdlog::error("http {}: connection failed: {}", connection->remote_address_, e.what());
                   } catch (...) {
                     spdlog::error("http {}: connection failed", connection->remote_address_);
                   }
                 }));
}

void HttpConnection::close_if_idle() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    // Waiting for the first byte of a request: nothing is lost by closing. Otherwise
    // run() sees `draining` after the reply and closes then.
    if (self->phase_ == Phase::kIdle) self->stream_.socket().cancel();
  });
}

void HttpConnection::abort() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] { self->abort_now(); });
}

void HttpConnection::abort_now() {
  if (aborted_) return;
  aborted_ = true;
  if (exchange_ != nullptr) exchange_->mark_gone();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
  cancel_.emit(asio::cancellation_type::terminal);
}

asio::awaitable<void> HttpConnection::run() {
  bool first = true;
  for (;;) {
    const ReadOutcome outcome = co_await read_request(first);
    first = false;
    if (outcome == ReadOutcome::kClosed) break;
    if (outcome == ReadOutcome::kRejected) {
      co_await send_rejection();
      break;
    }
    const bool keep_going = co_await serve_request();
    if (!keep_going || draining()) break;
  }
  phase_ = Phase::kClosing;
  if (!aborted_) co_await close_gracefully(stream_, state_->options.read_timeout);
}

asio::awaitable<HttpConnection::ReadOutcome> HttpConnection::read_request(bool first) {
  const HttpServerOptions& options = state_->options;
  // The first request must be whole within read_timeout of the accept; a later one
  // within read_timeout of its first byte, which may take idle_timeout to come.
  auto deadline = accepted_at_ + options.read_timeout;
  if (buffer_.size() == 0) {
    if (draining()) co_return ReadOutcome::kClosed;
    phase_ = Phase::kIdle;
    if (first) {
      stream_.expires_at(deadline);
    } else {
      stream_.expires_after(options.idle_timeout);
    }
    const auto [error, n] = co_await stream_.async_read_some(buffer_.prepare(kReadChunkBytes), kAwaitTuple);
    buffer_.commit(n);
    phase_ = Phase::kReading;
    if (error) co_return ReadOutcome::kClosed;  // closed, idle timeout, or stop_accepting()
    if (!first) deadline = std::chrono::steady_clock::now() + options.read_timeout;
  }
  phase_ = Phase::kReading;
  co_return co_await read_request_head(deadline);
}

// Reads the head, checks it, answers `Expect: 100-continue`, then reads the body.
asio::awaitable<HttpConnection::ReadOutcome> HttpConnection::read_request_head(
    std::chrono::steady_clock::time_point deadline) {
  const HttpServerOptions& options = state_->options;
  parser_.emplace();
  configure_request_parser(*parser_, options.max_header_bytes, options.max_body_bytes);
  stream_.expires_at(deadline);
  const auto [head_error, head_bytes] = co_await http::async_read_header(stream_, buffer_, *parser_, kAwaitTuple);
  if (head_error) co_return read_failed(head_error);
  rejection_ = check_request_head(*parser_);
  if (rejection_) co_return ReadOutcome::kRejected;

  switch (expect_action(*parser_)) {
    case ExpectAction::kReject:
      rejection_ = transport_error(http::status::expectation_failed, "only 100-continue is supported in Expect");
      co_return ReadOutcome::kRejected;
    case ExpectAction::kContinue: {
      stream_.expires_after(options.write_timeout);
      const auto [error, n] = co_await asio::async_write(stream_, asio::buffer(kContinue), kAwaitTuple);
      if (error) co_return ReadOutcome::kClosed;
      stream_.expires_at(deadline);
      break;
    }
    case ExpectAction::kNone:
      break;
  }
  if (!parser_->is_done()) {
    const auto [body_error, body_bytes] = co_await http::async_read(stream_, buffer_, *parser_, kAwaitTuple);
    if (body_error) co_return read_failed(body_error);
  }
  co_return ReadOutcome::kRequest;
}

HttpConnection::ReadOutcome HttpConnection::read_failed(const beast::error_code& error) {
  const HttpServerOptions& options = state_->options;
  rejection_ = rejection_for_read_error(error, options.max_header_bytes, options.max_body_bytes);
  if (rejection_) return ReadOutcome::kRejected;
  if (error == beast::error::timeout) spdlog::debug("http {}: request read timed out", remote_address_);
  return ReadOutcome::kClosed;
}

asio::awaitable<void> HttpConnection::send_rejection() {
  const bool head_parsed = parser_ && parser_->is_header_done();
  const unsigned version = head_parsed && parser_->get().version() == 10 ? 10 : 11;
  const std::string request_id = head_parsed ? request_id_for(parser_->get()) : make_request_id();
  spdlog::debug("http {}: {} {}", remote_address_, rejection_->status, rejection_->message);
  auto response = error_response(*rejection_, version, request_id);
  co_await write_response(response, false);
}

asio::awaitable<bool> HttpConnection::serve_request() {
  HttpRequest request = parser_->release();
  parser_.reset();
  std::string request_id = request_id_for(request);
  Exchange exchange(*this, std::move(request), std::move(request_id));
  const ActiveExchange active(state_->active_exchanges, exchange_, exchange);
  phase_ = Phase::kHandling;
  keep_after_exchange_ = false;
  // The watcher only ends when cancelled, which `||` does once the handler is done.
  co_await (run_handler(exchange) || watch_peer(exchange));
  co_return keep_after_exchange_;
}

asio::awaitable<void> HttpConnection::run_handler(Exchange& exchange) {
  bool failed = false;
  try {
    co_await state_->handler(exchange);
  } catch (const boost::system::system_error& e) {
    failed = true;
    if (aborted_ && e.code() == asio::error::operation_aborted) {
      spdlog::debug("http {}: request {} cancelled by the server's stop", remote_address_, exchange.request_id());
    } else {
      spdlog::error("http {}: request {}: handler failed: {}", remote_address_, exchange.request_id(), e.what());
    }
  } catch (const std::exception& e) {
    failed = true;
    spdlog::error("http {}: request {}: handler failed: {}", remote_address_, exchange.request_id(), e.what());
  } catch (...) {
    failed = true;
    spdlog::error("http {}: request {}: handler failed with a non-standard exception", remote_address_,
                  exchange.request_id());
  }
  exchange.handler_running_ = false;
  exchange.on_disconnect_ = nullptr;  // what it captured may die with the handler
  keep_after_exchange_ = co_await exchange.finish(failed);
}

// Reads the socket while the handler runs: EOF or an error means the client is gone
// (on_disconnect fires at once); bytes are the start of the next pipelined request.
asio::awaitable<void> HttpConnection::watch_peer(Exchange& exchange) {
  while (buffer_.size() < kMaxPipelinedBytes) {
    const auto [error, n] = co_await stream_.socket().async_read_some(buffer_.prepare(kReadChunkBytes), kAwaitTuple);
    buffer_.commit(n);
    if (!error) continue;
    const auto cancellation = co_await asio::this_coro::cancellation_state;
    if (cancellation.cancelled() != asio::cancellation_type::none) co_return;  // the handler is done
    spdlog::debug("http {}: request {}: client gone ({})", remote_address_, exchange.request_id(), error.message());
    exchange.mark_gone();
    break;
  }
  asio::steady_timer forever(stream_.get_executor(), asio::steady_timer::time_point::max());
  co_await forever.async_wait(kAwaitTuple);
}

}  // namespace pagoda::server
