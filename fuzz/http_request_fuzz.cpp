// Fuzzes the server's HTTP request reading: bytes, as a client could send them on one
// connection, go through the same parser configuration and checks as
// HttpConnection::read_request_head (http_server_protocol.h): parse the head, check it,
// decide on Expect, parse the body, then start over on what is left (pipelining). Every
// failure must be an ApiError reply or a silent close, never a crash, a leak or an
// exception escaping.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http/http_server_protocol.h"
#include "server/openai/api_error.h"

namespace {

using pagoda::server::HttpRequestParser;
namespace beast = boost::beast;

constexpr std::size_t kMaxHeaderBytes = 16 << 10;  // the server's defaults (http_server.h)
constexpr std::size_t kMaxBodyBytes = 64 << 10;    // smaller than the default: reach the 413 path

// Feeds `parser` from `input` until it has what it wants (`head_only`: the head) or input
// runs out. Returns the error, if any; `used` counts the bytes consumed.
beast::error_code feed(HttpRequestParser& parser, std::string_view input, std::size_t& used,
                       bool head_only) {
  beast::error_code error;
  while (used < input.size() && !(head_only ? parser.is_header_done() : parser.is_done())) {
    // At most 4 KiB a call, as reads arrive in pieces; the parser may take less.
    const std::size_t n = std::min<std::size_t>(input.size() - used, 4096);
    const std::size_t taken = parser.put(boost::asio::buffer(input.data() + used, n), error);
    if (error == beast::http::error::need_more) {
      error = {};
      if (taken == 0) break;  // needs bytes we have not got: a read would wait here
    }
    if (error) return error;
    used += taken;
  }
  if (used == input.size() && !parser.is_done() && parser.got_some()) {
    parser.put_eof(error);  // the client closed the connection
  }
  return error;
}

void check_reply(const pagoda::server::ApiError& error) {
  // The reply body is built for every rejection: it must serialize.
  const std::string body = pagoda::server::error_body(error);
  if (body.empty() || error.status < 400 || error.status > 599) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t used = 0;
  for (int requests = 0; requests < 64 && used < input.size(); ++requests) {
    HttpRequestParser parser;
    pagoda::server::configure_request_parser(parser, kMaxHeaderBytes, kMaxBodyBytes);
    beast::error_code error = feed(parser, input, used, /*head_only=*/true);
    if (error || !parser.is_header_done()) {
      if (auto reply = pagoda::server::rejection_for_read_error(error, kMaxHeaderBytes, kMaxBodyBytes)) {
        check_reply(*reply);
      }
      return 0;  // the connection closes
    }
    if (auto rejection = pagoda::server::check_request_head(parser)) {
      check_reply(*rejection);
      (void)pagoda::server::request_id_for(parser.get());
      return 0;
    }
    if (pagoda::server::expect_action(parser) == pagoda::server::ExpectAction::kReject) return 0;
    error = feed(parser, input, used, /*head_only=*/false);
    if (error || !parser.is_done()) {
      if (auto reply = pagoda::server::rejection_for_read_error(error, kMaxHeaderBytes, kMaxBodyBytes)) {
        check_reply(*reply);
      }
      return 0;
    }
    const pagoda::server::HttpRequest request = parser.release();
    const std::string id = pagoda::server::request_id_for(request);
    if (!pagoda::server::is_acceptable_request_id(id)) __builtin_trap();  // ids echoed must be safe
    if (request.body().size() > kMaxBodyBytes) __builtin_trap();
    if (!request.keep_alive()) return 0;
  }
  return 0;
}
