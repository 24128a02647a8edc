#pragma once
// One HTTP request and its response, as a handler sees them. The transport
// (http_server.h) reads the request, builds an Exchange on the connection's strand,
// runs the handler coroutine with it, and while the handler runs watches the socket
// so that a client that leaves is noticed at once (on_disconnect).
//
//   asio::awaitable<void> handle(Exchange& ex) {
//     if (!streaming) co_return co_await ex.respond(http::status::ok, body);
//     ex.on_disconnect([&] { engine.abort(id); });
//     if (!co_await ex.begin_stream()) co_return;
//     while (...) if (!co_await ex.send_event(chunk_json)) break;   // false: client gone
//     co_await ex.send_event("[DONE]");
//     co_await ex.end_stream();
//   }
//
// Everything here runs on the connection's strand (executor()); an Exchange is not
// thread-safe, and one write (respond / begin_stream / send_event / end_stream) runs at
// a time. A write never throws: a failed or timed-out write marks the client gone.
// A handler that returns without replying gets a 500 sent for it; one that returns
// mid-stream gets its stream ended.
//
// This header carries Beast's message types and Asio's awaitable only; the sockets,
// parsers and serializers stay in the transport's .cpp files.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

namespace pagoda::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

using HttpRequest = http::request<http::string_body>;

class HttpConnection;  // the transport's side of a connection (http_server_connection.h)

class Exchange {
 public:
  // Made by the transport only. `request_id` is already sanitised or generated.
  Exchange(HttpConnection& connection, HttpRequest request, std::string request_id);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  const HttpRequest& request() const { return request_; }
  // The client's X-Request-Id when it is 1..128 visible ASCII characters, else a fresh
  // 32-hex-digit id. Sent back on every reply.
  std::string_view request_id() const { return request_id_; }
  // "ip:port" of the peer ("[v6]:port" for IPv6).
  std::string_view remote_address() const;

  // Added to whatever reply is sent (whole or stream head). Set before replying.
  void add_header(std::string name, std::string value);

  // A whole response: Content-Type as given, Content-Length, X-Request-Id, Date,
  // keep-alive as the request asked (unless the server is shutting down). A HEAD
  // request gets the head only. Does nothing if a reply was already started.
  asio::awaitable<void> respond(http::status status, std::string body,
                                std::string_view content_type = "application/json");

  // Server-sent events: a 200 head (text/event-stream, Cache-Control: no-cache, chunked
  // on HTTP/1.1, close-delimited on HTTP/1.0), then one event per send_event, each
  // written and flushed at once. Both return false once the client is gone (or when a
  // reply was already started, for begin_stream).
  asio::awaitable<bool> begin_stream();
  // Sends `data: <payload>\n\n` (a payload with newlines becomes one data line each).
  asio::awaitable<bool> send_event(std::string_view payload);
  // The last chunk; the connection goes on with its next request (HTTP/1.1 keep-alive).
  asio::awaitable<void> end_stream();

  // Called at most once, on the connection's strand, when the peer closes or resets the
  // connection, a write to it fails or times out, or the server stops, while the handler
  // still runs. A client that is merely slow to read does not trigger it (until the
  // write timeout). Set it before awaiting anything long; if the client is already gone,
  // the callback runs right away, inside on_disconnect.
  void on_disconnect(std::function<void()> callback);
  bool disconnected() const { return disconnected_; }

  // The connection's strand: post here to touch this Exchange from another thread.
  asio::any_io_executor executor() const;

  // For the access log: the status of the reply sent or being sent (0: none yet), and
  // the bytes written to the socket for it, head included.
  int status_sent() const { return status_sent_; }
  std::size_t bytes_sent() const { return bytes_sent_; }

 private:
  friend class HttpConnection;
  enum class Reply { kNone, kWhole, kStreaming, kStreamEnded };

  template <class Fields>
  void set_common_headers(http::header<false, Fields>& head);
  bool keep_alive_wanted() const;
  // The peer is gone (EOF, reset, failed write, server stop): fires the callback once.
  void mark_gone();
  void note_write(bool ok, std::size_t bytes);

  // Transport side: called when the handler returned (or threw, `failed`): sends a 500
  // if nothing was sent, ends an open stream. Returns whether the connection may carry
  // another request.
  asio::awaitable<bool> finish(bool failed);

  HttpConnection& connection_;
  HttpRequest request_;
  std::string request_id_;
  std::vector<std::pair<std::string, std::string>> extra_headers_;
  std::function<void()> on_disconnect_;
  Reply reply_ = Reply::kNone;
  bool handler_running_ = true;  // the callback fires only while the handler runs
  bool disconnected_ = false;    // the peer left (or the server is dropping it)
  bool write_failed_ = false;    // the socket refused a write: nothing more is sent
  bool keep_alive_sent_ = false;  // the reply told the client the connection stays open
  bool chunked_ = false;          // the stream uses chunked transfer coding (HTTP/1.1)
  int status_sent_ = 0;
  std::size_t bytes_sent_ = 0;
};

// A request handler: a coroutine run on the connection's strand, one per request.
// It should not throw; if it does, the client gets a 500 (or a cut stream) and the
// error is logged.
using Handler = std::function<asio::awaitable<void>(Exchange&)>;

}  // namespace pagoda::server
