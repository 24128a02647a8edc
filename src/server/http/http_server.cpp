#include "server/http/http_server.h"

#include <spdlog/spdlog.h>

#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/http/http_server_connection.h"

namespace pagoda::server {
namespace {

constexpr auto kAwaitTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
constexpr int kMaxIoThreads = 1024;
constexpr std::size_t kMinHeaderBytes = 1024;

using Acceptor = asio::basic_socket_acceptor<tcp, Strand>;

Status check_options(const HttpServerOptions& options, const Handler& handler) {
  using std::chrono::milliseconds;
  if (!handler) return invalid_argument("http server: no request handler");
  if (options.io_threads < 1 || options.io_threads > kMaxIoThreads) {
    return invalid_argument("io_threads: " + std::to_string(options.io_threads) + " is out of range 1.." +
                            std::to_string(kMaxIoThreads));
  }
  if (options.max_connections < 1) return invalid_argument("max_connections: must be at least 1");
  if (options.max_header_bytes < kMinHeaderBytes) {
    return invalid_argument("max_header_bytes: must be at least " + std::to_string(kMinHeaderBytes));
  }
  if (options.idle_timeout <= milliseconds(0) || options.read_timeout <= milliseconds(0) ||
      options.write_timeout <= milliseconds(0) || options.stop_timeout < milliseconds(0)) {
    return invalid_argument("http server: timeouts must be positive");
  }
  return {};
}

// Opens, binds and listens on the first address of `options.host` that accepts it.
Status listen(Acceptor& acceptor, const HttpServerOptions& options) {
  beast::error_code error;
  std::vector<tcp::endpoint> endpoints;
  const auto address = asio::ip::make_address(options.host, error);
  if (!error) {
    endpoints.emplace_back(address, options.port);
  } else {
    tcp::resolver resolver(acceptor.get_executor());
    const auto results = resolver.resolve(options.host, std::to_string(options.port),
                                          tcp::resolver::passive | tcp::resolver::numeric_service, error);
    if (error) return invalid_argument("host: cannot resolve '" + options.host + "': " + error.message());
    for (const auto& entry : results) endpoints.push_back(entry.endpoint());
  }
  for (const auto& endpoint : endpoints) {
    if (acceptor.is_open()) acceptor.close(error);
    acceptor.open(endpoint.protocol(), error);
    if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error) acceptor.bind(endpoint, error);
    if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (!error) return {};
  }
  return io_error("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                  error.message());
}

asio::awaitable<void> accept_loop(std::shared_ptr<HttpServerState> state, Acceptor& acceptor,
                                  asio::io_context& io) {
  for (;;) {
    auto strand = asio::make_strand(io);
    auto [error, socket] = co_await acceptor.async_accept(strand, kAwaitTuple);
    if (!acceptor.is_open() || error == asio::error::operation_aborted) co_return;  // stop_accepting()
    if (error) {
      if (error == asio::error::connection_aborted) continue;  // the client gave up first
      // Out of descriptors or memory: wait a little rather than spin on the error.
      spdlog::warn("http: accept failed: {}", error.message());
      asio::steady_timer pause(acceptor.get_executor(), kAcceptRetryDelay);
      co_await pause.async_wait(kAwaitTuple);
      continue;
    }
    if (state->open_connections.load(std::memory_order_relaxed) >= state->options.max_connections) {
      asio::co_spawn(strand, reject_overloaded(std::move(socket), state->options.write_timeout), asio::detached);
      continue;
    }
    HttpConnection::launch(std::make_shared<HttpConnection>(state, std::move(socket)));
  }
}

}  // namespace

struct HttpServer::Impl {
  Impl(HttpServerOptions options, Handler handler)
      : state(std::make_shared<HttpServerState>(std::move(options), std::move(handler))),
        acceptor(asio::make_strand(io)) {}

  void close_acceptor();

  std::shared_ptr<HttpServerState> state;
  // Lives until the server is destroyed: executors handed out by exchanges stay valid.
  asio::io_context io;
  Acceptor acceptor;  // used on its strand once started
  uint16_t port = 0;

  std::mutex stop_mutex;       // held through stop()
  std::mutex lifecycle_mutex;  // guards what follows; held briefly
  bool started = false;
  bool accepting = true;
  bool stopped = false;
  std::vector<std::thread> threads;
};

// Closes the listener on its strand and waits for that, so that once this returns new
// connections are refused.
void HttpServer::Impl::close_acceptor() {
  if (!started || stopped) {  // no thread runs the io_context: nothing else touches it
    beast::error_code ignored;
    acceptor.close(ignored);
    return;
  }
  std::promise<void> closed;
  asio::post(acceptor.get_executor(), [this, &closed] {
    beast::error_code ignored;
    acceptor.close(ignored);
    closed.set_value();
  });
  if (io.get_executor().running_in_this_thread()) return;  // an I/O thread: don't wait on itself
  closed.get_future().wait();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

Expected<std::unique_ptr<HttpServer>> HttpServer::create(HttpServerOptions options, Handler handler) {
  PAGODA_TRY(check_options(options, handler));
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  PAGODA_TRY(listen(impl->acceptor, impl->state->options));
  beast::error_code error;
  impl->port = impl->acceptor.local_endpoint(error).port();
  if (error) return io_error("cannot read the listening port: " + error.message());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

uint16_t HttpServer::port() const { return impl_->port; }

const HttpServerOptions& HttpServer::options() const { return impl_->state->options; }

void HttpServer::start() {
  const std::lock_guard lock(impl_->lifecycle_mutex);
  if (impl_->started || impl_->stopped) return;
  impl_->started = true;
  Impl& impl = *impl_;
  asio::co_spawn(impl.acceptor.get_executor(), accept_loop(impl.state, impl.acceptor, impl.io),
                 [](std::exception_ptr error) {
                   if (!error) return;
                   try {
                     std::rethrow_exception(error);
                   } catch (const std::exception& e) {
                     spdlog::error("http: the accept loop failed: {}", e.what());
                   }
                 });
  for (int i = 0; i < impl.state->options.io_threads; ++i) {
    impl.threads.emplace_back([&io = impl.io] {
      for (;;) {
        try {
          io.run();
          return;
        } catch (const std::exception& e) {  // a completion handler threw: log and go on
          spdlog::error("http: an I/O thread caught: {}", e.what());
        }
      }
    });
  }
  spdlog::info("http: listening on {}:{} with {} I/O threads", impl.state->options.host, impl.port,
               impl.state->options.io_threads);
}

void HttpServer::stop_accepting() {
  const std::lock_guard lock(impl_->lifecycle_mutex);
  if (!impl_->accepting) return;
  impl_->accepting = false;
  impl_->state->draining.store(true);
  impl_->close_acceptor();
  for (const auto& connection : impl_->state->connections_snapshot()) connection->close_if_idle();
}

std::size_t HttpServer::open_connections() const {
  return impl_->state->open_connections.load(std::memory_order_relaxed);
}

std::size_t HttpServer::active_exchanges() const {
  return impl_->state->active_exchanges.load(std::memory_order_relaxed);
}

void HttpServer::stop() {
  Impl& impl = *impl_;
  const std::lock_guard stop_lock(impl.stop_mutex);  // one stop() at a time; later ones return at once
  stop_accepting();
  std::vector<std::thread> threads;
  {
    const std::lock_guard lock(impl.lifecycle_mutex);
    if (impl.stopped) return;
    impl.stopped = true;
    threads = std::move(impl.threads);
  }
  if (threads.empty()) return;  // never started
  for (const auto& connection : impl.state->connections_snapshot()) connection->abort();
  if (!impl.state->wait_until_all_closed(impl.state->options.stop_timeout)) {
    spdlog::warn("http: {} connections still open after {} ms; stopping anyway",
                 impl.state->open_connections.load(), impl.state->options.stop_timeout.count());
  }
  impl.io.stop();
  for (auto& thread : threads) {
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();  // stop() on an I/O thread (not allowed, see the header): no self-join
    } else {
      thread.join();
    }
  }
}

void HttpServerState::add(const std::shared_ptr<HttpConnection>& connection) {
  const std::lock_guard lock(mutex_);
  connections_.emplace(connection.get(), connection);
}

void HttpServerState::remove(HttpConnection* connection) {
  const std::lock_guard lock(mutex_);
  connections_.erase(connection);
  if (connections_.empty()) all_closed_.notify_all();
}

std::vector<std::shared_ptr<HttpConnection>> HttpServerState::connections_snapshot() {
  const std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<HttpConnection>> live;
  live.reserve(connections_.size());
  for (const auto& [raw, weak] : connections_) {
    if (auto connection = weak.lock()) live.push_back(std::move(connection));
  }
  return live;
}

bool HttpServerState::wait_until_all_closed(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return all_closed_.wait_for(lock, timeout, [this] { return connections_.empty(); });
}

}  // namespace pagoda::server
