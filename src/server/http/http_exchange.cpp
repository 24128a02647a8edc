#include "server/http/http_exchange.h"

#include <spdlog/spdlog.h>

#include <ctime>
#include <exception>

#include "server/http/http_server_connection.h"
#include "server/http/http_server_protocol.h"
#include "server/http/sse.h"

namespace pagoda::server {
namespace {

// nginx's convention for the access log: the client closed the connection before any
// reply was sent.
constexpr int kClientClosedRequest = 499;

bool is_safe_header_text(std::string_view text) {
  return text.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool status_forbids_body(http::status status) {
  const int code = static_cast<int>(status);
  return code < 200 || code == 204 || code == 304;
}

}  // namespace

Exchange::Exchange(HttpConnection& connection, HttpRequest request, std::string request_id)
    : connection_(connection), request_(std::move(request)), request_id_(std::move(request_id)) {}

Exchange::~Exchange() = default;

std::string_view Exchange::remote_address() const { return connection_.remote_address(); }

asio::any_io_executor Exchange::executor() const { return connection_.executor(); }

void Exchange::add_header(std::string name, std::string value) {
  if (name.empty() || !is_safe_header_text(name) || !is_safe_header_text(value)) {
    spdlog::warn("request {}: header '{}' dropped: empty name, or CR, LF or NUL in it", request_id_,
                 is_safe_header_text(name) ? name : "?");
    return;
  }
  extra_headers_.emplace_back(std::move(name), std::move(value));
}

template <class Fields>
void Exchange::set_common_headers(http::header<false, Fields>& head) {
  head.set(http::field::server, "pagoda");
  head.set(http::field::date, http_date(std::time(nullptr)));
  head.set("X-Request-Id", request_id_);
  for (const auto& [name, value] : extra_headers_) head.insert(name, value);
}

bool Exchange::keep_alive_wanted() const { return request_.keep_alive() && !connection_.draining(); }

asio::awaitable<void> Exchange::respond(http::status status, std::string body,
                                        std::string_view content_type) {
  if (reply_ != Reply::kNone) {
    spdlog::error("request {}: a second reply ({}) was dropped", request_id_, static_cast<int>(status));
    co_return;
  }
  reply_ = Reply::kWhole;
  status_sent_ = static_cast<int>(status);
  http::response<http::string_body> response{status, request_.version()};
  set_common_headers(response.base());
  // 1xx, 204 and 304 carry neither a body nor Content-Length / Content-Type (RFC 9110 8.6).
  if (!status_forbids_body(status)) {
    response.set(http::field::content_type, content_type);
    response.body() = std::move(body);
    response.prepare_payload();
  }
  keep_alive_sent_ = keep_alive_wanted();
  response.keep_alive(keep_alive_sent_);
  // A client that only half-closed may still read the reply, so it is written unless a
  // write already failed.
  if (write_failed_) co_return;
  const auto result = co_await connection_.write_response(response, request_.method() == http::verb::head);
  note_write(result.ok, result.bytes);
}

asio::awaitable<bool> Exchange::begin_stream() {
  if (reply_ != Reply::kNone) {
    spdlog::error("request {}: begin_stream after a reply was started", request_id_);
    co_return false;
  }
  reply_ = Reply::kStreaming;
  status_sent_ = static_cast<int>(http::status::ok);
  if (disconnected_ || write_failed_) co_return false;
  http::response<http::empty_body> head{http::status::ok, request_.version()};
  set_common_headers(head.base());
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  head.set("X-Accel-Buffering", "no");  // tells a proxy such as nginx not to hold events back
  // HTTP/1.0 has no chunked coding: the body ends when the connection closes.
  chunked_ = request_.version() >= 11;
  keep_alive_sent_ = chunked_ && keep_alive_wanted();
  head.keep_alive(keep_alive_sent_);
  if (chunked_) head.chunked(true);
  const auto result = co_await connection_.write_stream_head(head);
  note_write(result.ok, result.bytes);
  co_return result.ok;
}

asio::awaitable<bool> Exchange::send_event(std::string_view payload) {
  if (reply_ != Reply::kStreaming || disconnected_ || write_failed_) co_return false;
  if (request_.method() == http::verb::head) co_return true;  // a HEAD reply has no body
  const std::string frame = chunked_ ? sse_event_chunk(payload) : sse_event(payload);
  const auto result = co_await connection_.write_bytes(frame);
  note_write(result.ok, result.bytes);
  co_return result.ok;
}

asio::awaitable<void> Exchange::end_stream() {
  if (reply_ != Reply::kStreaming) co_return;
  reply_ = Reply::kStreamEnded;
  if (!chunked_ || request_.method() == http::verb::head || disconnected_ || write_failed_) co_return;
  const auto result = co_await connection_.write_bytes(kLastHttpChunk);
  note_write(result.ok, result.bytes);
}

void Exchange::on_disconnect(std::function<void()> callback) {
  if (!disconnected_) {
    on_disconnect_ = std::move(callback);
    return;
  }
  if (handler_running_ && callback) callback();  // gone already: tell the caller now
}

void Exchange::mark_gone() {
  if (disconnected_) return;
  disconnected_ = true;
  if (!handler_running_ || !on_disconnect_) return;
  auto callback = std::move(on_disconnect_);
  on_disconnect_ = nullptr;
  try {
    callback();
  } catch (const std::exception& e) {
    spdlog::error("request {}: the disconnect callback threw: {}", request_id_, e.what());
  } catch (...) {
    spdlog::error("request {}: the disconnect callback threw", request_id_);
  }
}

void Exchange::note_write(bool ok, std::size_t bytes) {
  bytes_sent_ += bytes;
  if (ok) return;
  write_failed_ = true;
  mark_gone();
}

asio::awaitable<bool> Exchange::finish(bool failed) {
  if (reply_ == Reply::kNone) {
    if (disconnected_) {
      status_sent_ = kClientClosedRequest;
      co_return false;
    }
    if (!failed) spdlog::error("request {}: the handler returned without a reply", request_id_);
    co_await respond(http::status::internal_server_error,
                     error_body(internal_error("The server failed while handling the request.")));
  } else if (reply_ == Reply::kStreaming) {
    // A handler that failed mid-stream leaves the stream cut (no last chunk), so the
    // client sees an incomplete reply rather than a clean end.
    if (failed) co_return false;
    co_await end_stream();
  }
  co_return keep_alive_sent_ && !disconnected_ && !write_failed_;
}

}  // namespace pagoda::server
