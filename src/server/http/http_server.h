#pragma once
// The HTTP/1.1 server: one io_context run by `io_threads` threads, an accept loop
// coroutine, and one coroutine per connection on its own strand, so thousands of idle
// or streaming connections cost memory, not threads. Each request goes to the Handler
// with an Exchange (http_exchange.h).
//
//   auto server = HttpServer::create(options, handler);   // binds (port 0: any free port)
//   (*server)->start();                                   // threads run the io_context
//   ...                                                    // SIGTERM:
//   (*server)->stop_accepting();                          // no new connections
//   while ((*server)->active_exchanges() > 0 && before_deadline) wait;
//   (*server)->stop();                                    // drop the rest, join threads
//
// Per connection: keep-alive (HTTP/1.1 by default, HTTP/1.0 on request), pipelined
// requests answered in order, `Expect: 100-continue`, limits (header 16 KiB -> 431,
// body -> 413, malformed -> 400, each then closed), a read timeout for a request that
// trickles in, an idle timeout between requests, a write timeout for a client that
// stops reading, TCP_NODELAY. Past max_connections a new connection gets a 503.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "server/http/http_exchange.h"

namespace pagoda::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an address ("0.0.0.0", "::") or a name ("localhost")
  uint16_t port = 8080;            // 0: pick a free one (see HttpServer::port())
  int io_threads = 2;
  std::size_t max_body_bytes = 8 << 20;  // over it: 413 in OpenAI's error shape, then close
  std::size_t max_header_bytes = 16 << 10;  // request line + fields; over it: 431, then close
  // Timeouts. Milliseconds so that tests can use short ones; assign seconds freely.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};  // keep-alive, no request
  std::chrono::milliseconds read_timeout{std::chrono::seconds(30)};  // head + body of one request
  std::chrono::milliseconds write_timeout{std::chrono::seconds(30)};  // one write to the client
  std::size_t max_connections = 10000;  // open at once; more: 503 and close
  // stop(): how long exchanges cut off by it may take to unwind before the threads are
  // stopped anyway.
  std::chrono::milliseconds stop_timeout{std::chrono::seconds(2)};
};

class HttpServer {
 public:
  // Checks the options, resolves the host and binds the port (an error if it is taken
  // or the host is unknown). Nothing is served until start().
  static Expected<std::unique_ptr<HttpServer>> create(HttpServerOptions options, Handler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;  // the bound port (the chosen one when options.port was 0)
  const HttpServerOptions& options() const;

  // Starts io_threads threads that run the accept loop and the connections. Once.
  void start();
  // Graceful shutdown, step 1: closes the listener (new connections are refused once this
  // returns) and idle keep-alive connections; exchanges in flight go on, and their
  // connections close after their reply. Idempotent; any thread.
  void stop_accepting();
  std::size_t open_connections() const;  // connections being served
  std::size_t active_exchanges() const;  // handlers running
  // Stops accepting, tells every running exchange its client is gone (on_disconnect),
  // closes every connection, cancels what handlers are waiting on, waits up to
  // stop_timeout for them to unwind, then stops and joins the threads. Idempotent; any
  // thread but an I/O thread of this server.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda::server
