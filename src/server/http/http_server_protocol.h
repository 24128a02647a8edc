#pragma once
// The transport's HTTP rules, apart from any socket: how the request parser is set up,
// which read errors get which reply, the checks a parsed request must pass, request ids,
// the error body, the Date header. The server and the request fuzzer both use these,
// so the fuzzer exercises exactly the server's parsing path.

#include <cstddef>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>

#include "server/http/http_exchange.h"
#include "server/openai/api_error.h"

namespace pagoda::server {

using HttpRequestParser = http::request_parser<http::string_body>;

// Applies the server's limits to a fresh parser: header bytes (request line and fields)
// and body bytes (Content-Length or the sum of the chunks).
void configure_request_parser(HttpRequestParser& parser, std::size_t max_header_bytes,
                              std::size_t max_body_bytes);

// Requests the transport answers itself, with an error in OpenAI's shape (api_error.h),
// and then closes the connection.

// What a failed read means for the client: a reply (431 header too large, 413 body too
// large, 400 malformed) or nothing (nullopt: the peer closed, reset or timed out, or the
// read was cancelled; the connection is just closed).
std::optional<ApiError> rejection_for_read_error(const boost::system::error_code& error,
                                                      std::size_t max_header_bytes,
                                                      std::size_t max_body_bytes);

// What `Expect` asks of the server once the head is read.
enum class ExpectAction {
  kNone,      // no Expect field, or no body to come
  kContinue,  // "100-continue" on HTTP/1.1 with a body to come: send 100 Continue
  kReject,    // an expectation the server cannot meet: 417
};
ExpectAction expect_action(const HttpRequestParser& parser);

// Checks a request once its head is parsed (before any body is read) and normalises it:
// only HTTP/1.0 and 1.1 (else 505); one Host on HTTP/1.1 (RFC 9112 3.2); no
// Transfer-Encoding but a final "chunked" (else 400, or 501 for other codings); a
// target in origin form ("/path?query"), "*" for OPTIONS, or absolute form
// ("http://host/path", rewritten to origin form with Host set to the authority).
std::optional<ApiError> check_request_head(HttpRequestParser& parser);

// The X-Request-Id to use: the client's when it is 1..128 visible ASCII characters
// (0x21..0x7e), else a new random 32-hex-digit id.
std::string request_id_for(const HttpRequest& request);
std::string make_request_id();
bool is_acceptable_request_id(std::string_view id);

// An error the transport sends: OpenAI's type for the status ("invalid_request_error"
// for 4xx, "server_error" for 5xx), no param, no code.
ApiError transport_error(http::status status, std::string message);

// RFC 9110 IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". Cached per thread per second.
std::string_view http_date(std::time_t now);

}  // namespace pagoda::server
