#include "server/http/http_server_protocol.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>

#include "core/ascii.h"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/rfc7230.hpp>

namespace pagoda::server {
namespace {

constexpr std::size_t kMaxRequestIdLength = 128;

ApiError reject(http::status status, std::string message) { return transport_error(status, std::move(message)); }

// RFC 9112 3.2.2: a server must accept the absolute form ("http://host:port/p?q"); we
// serve it as its origin form ("/p?q") with Host set to the authority. Returns false if
// `target` is not an http(s) URI.
bool rewrite_absolute_form(HttpRequest& request) {
  const std::string_view target = request.target();
  std::size_t scheme_length = 0;
  if (ascii_istarts_with(target, "http://")) scheme_length = 7;
  if (ascii_istarts_with(target, "https://")) scheme_length = 8;
  if (scheme_length == 0) return false;
  const std::string_view rest = target.substr(scheme_length);
  const std::size_t path_start = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_start);
  if (authority.empty()) return false;
  const std::string_view path = path_start == std::string_view::npos ? "" : rest.substr(path_start);
  std::string origin_form;
  if (path.empty() || path.front() != '/') origin_form += '/';  // "http://h" and "http://h?q"
  origin_form += path;
  request.set(http::field::host, authority);
  request.target(origin_form);
  return true;
}

// Transfer-Encoding on a request: only "chunked", once, and last (RFC 9112 6.1, 6.3).
// Beast treats a request whose last coding is not chunked as having no body, which
// would let the body be read as the next request: refuse it instead.
std::optional<ApiError> check_transfer_encoding(const HttpRequestParser& parser) {
  const auto& head = parser.get();
  const auto field = head.find(http::field::transfer_encoding);
  if (field == head.end()) return std::nullopt;
  if (!parser.chunked()) {
    return reject(http::status::bad_request, "invalid Transfer-Encoding: chunked must come last");
  }
  for (const auto coding : http::token_list{field->value()}) {
    if (!ascii_iequals(coding, "chunked")) {
      return reject(http::status::not_implemented,
                    "transfer coding '" + std::string(coding) + "' is not supported");
    }
  }
  return std::nullopt;
}

}  // namespace

void configure_request_parser(HttpRequestParser& parser, std::size_t max_header_bytes,
                              std::size_t max_body_bytes) {
  const std::size_t header_cap = std::numeric_limits<std::uint32_t>::max();
  parser.header_limit(static_cast<std::uint32_t>(std::min(max_header_bytes, header_cap)));
  parser.body_limit(static_cast<std::uint64_t>(max_body_bytes));
}

std::optional<ApiError> rejection_for_read_error(const boost::system::error_code& error,
                                                      std::size_t max_header_bytes,
                                                      std::size_t max_body_bytes) {
  const auto& http_category = make_error_code(http::error::end_of_stream).category();
  if (error.category() != http_category) return std::nullopt;  // closed, reset, timed out
  switch (static_cast<http::error>(error.value())) {
    case http::error::end_of_stream:    // closed between requests
    case http::error::partial_message:  // closed in the middle of one: nobody to answer
      return std::nullopt;
    case http::error::header_limit:
    case http::error::buffer_overflow:
      return reject(http::status::request_header_fields_too_large,
                    "request header fields are larger than the limit of " +
                        std::to_string(max_header_bytes) + " bytes");
    case http::error::bad_version:  // Beast accepts HTTP/1.0 and HTTP/1.1 only
      return reject(http::status::http_version_not_supported, "only HTTP/1.0 and HTTP/1.1 are served");
    case http::error::body_limit:
      return payload_too_large(max_body_bytes);
    default:
      return reject(http::status::bad_request, "malformed HTTP request: " + error.message());
  }
}

ExpectAction expect_action(const HttpRequestParser& parser) {
  const auto& head = parser.get();
  const auto field = head.find(http::field::expect);
  // RFC 9110 10.1.1: ignore Expect on HTTP/1.0, and when there is no body to wait for.
  if (field == head.end() || head.version() < 11 || parser.is_done()) return ExpectAction::kNone;
  return ascii_iequals(field->value(), "100-continue") ? ExpectAction::kContinue
                                                               : ExpectAction::kReject;
}

std::optional<ApiError> check_request_head(HttpRequestParser& parser) {
  HttpRequest& request = parser.get();
  if (request.version() != 10 && request.version() != 11) {  // (the parser refuses others too)
    return reject(http::status::http_version_not_supported, "only HTTP/1.0 and HTTP/1.1 are served");
  }
  const std::size_t hosts = request.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && request.version() == 11)) {
    return reject(http::status::bad_request, "an HTTP/1.1 request needs exactly one Host field");
  }
  if (auto rejection = check_transfer_encoding(parser)) return rejection;

  const std::string_view target = request.target();
  if (!target.empty() && target.front() == '/') return std::nullopt;
  if (target == "*" && request.method() == http::verb::options) return std::nullopt;
  if (rewrite_absolute_form(request)) return std::nullopt;
  return reject(http::status::bad_request, "invalid request target");
}

bool is_acceptable_request_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

std::string make_request_id() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t bits = generator();
    for (std::size_t i = 0; i < 16; ++i, bits >>= 4) id[half * 16 + i] = kHex[bits & 0xf];
  }
  return id;
}

std::string request_id_for(const HttpRequest& request) {
  const auto field = request.find("X-Request-Id");
  if (field != request.end() && is_acceptable_request_id(field->value())) {
    return std::string(field->value());
  }
  return make_request_id();
}

ApiError transport_error(http::status status, std::string message) {
  ApiError error;
  error.status = static_cast<int>(status);
  error.message = std::move(message);
  error.type = error.status >= 500 ? "server_error" : "invalid_request_error";
  return error;
}

std::string_view http_date(std::time_t now) {
  // Formatted by hand: strftime's %a and %b follow the locale.
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  thread_local std::time_t cached_second = -1;
  thread_local std::array<char, 40> cached{};
  thread_local std::size_t cached_length = 0;
  if (now != cached_second) {
    std::tm utc{};
    gmtime_r(&now, &utc);
    const int written = std::snprintf(cached.data(), cached.size(), "%s, %02d %s %04d %02d:%02d:%02d GMT",
                                      kDays[utc.tm_wday % 7], utc.tm_mday, kMonths[utc.tm_mon % 12],
                                      utc.tm_year + 1900, utc.tm_hour, utc.tm_min, utc.tm_sec);
    cached_length = written > 0 ? std::min<std::size_t>(written, cached.size() - 1) : 0;
    cached_second = now;
  }
  return {cached.data(), cached_length};
}

}  // namespace pagoda::server
