#pragma once
// Test helpers for the HTTP transport: a blocking loopback client on plain POSIX sockets
// (every read bounded by poll(), so a broken server fails a test instead of hanging it),
// a response reader built on Beast's parser, and a server started on a free port.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "server/http/http_server.h"

namespace pagoda::server::testing {

using namespace std::chrono_literals;

struct TestResponse {
  int status = 0;
  unsigned version = 0;                       // 10 or 11
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // decoded (chunks joined)
  bool keep_alive = false;
  bool chunked = false;

  std::string header(const std::string& lower_case_name) const;
};

class TestClient {
 public:
  explicit TestClient(uint16_t port);  // connects to 127.0.0.1:port; see connected()
  ~TestClient();
  TestClient(TestClient&& other) noexcept;
  TestClient& operator=(TestClient&&) = delete;
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  bool connected() const { return fd_ >= 0 && connect_error_ == 0; }
  int connect_error() const { return connect_error_; }  // errno of connect(), 0 if it worked

  bool send(std::string_view bytes);
  // Whatever arrives within `timeout` ("" if nothing did); bytes already buffered first.
  std::string read_some(std::chrono::milliseconds timeout);
  // Reads until `marker` has arrived; returns everything up to and including it, or
  // nullopt on timeout or close (what was read stays buffered).
  std::optional<std::string> read_until(std::string_view marker, std::chrono::milliseconds timeout = 2s);
  // One chunk of a chunked body, after its head was read with read_until("\r\n\r\n").
  std::optional<std::string> read_chunk(std::chrono::milliseconds timeout = 2s);
  // One whole response (Content-Length, chunked or close-delimited body).
  std::optional<TestResponse> read_response(std::chrono::milliseconds timeout = 2s, bool head_request = false);
  // True when the server closed (EOF or reset) within `timeout`, all data discarded.
  bool wait_closed(std::chrono::milliseconds timeout = 2s);
  bool closed() const { return closed_; }

  void shutdown_write();
  void close();
  void reset();  // close with SO_LINGER 0: the server sees a reset
  void set_receive_buffer(int bytes);

 private:
  // Reads once into pending_ within `timeout`; false on timeout or close.
  bool fill(std::chrono::milliseconds timeout);

  int fd_ = -1;
  int connect_error_ = 0;
  bool closed_ = false;
  std::string pending_;
};

// "GET /path HTTP/1.1" with Host and optional extra header lines ("Name: value\r\n").
std::string get_request(std::string_view path, std::string_view extra_headers = "");
std::string post_request(std::string_view path, std::string_view body, std::string_view extra_headers = "");
// The payloads of an SSE body ("data: X\n\n" each), [DONE] included.
std::vector<std::string> sse_payloads(const std::string& body);

// Short timeouts so that tests run fast; port 0.
HttpServerOptions test_options();
// create() + start(); fails the test (and returns null) if the server cannot start.
std::unique_ptr<HttpServer> start_server(Handler handler, HttpServerOptions options = test_options());

// In a handler: waits (polling every millisecond) until `done()` or `timeout`; returns done().
boost::asio::awaitable<bool> wait_until(std::function<bool()> done, std::chrono::milliseconds timeout = 2s);
// In a handler: sleeps for `duration`.
boost::asio::awaitable<void> sleep_for(std::chrono::milliseconds duration);

// Spins (from the test thread) until `done()` or `timeout`; returns done().
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 2s);

}  // namespace pagoda::server::testing
