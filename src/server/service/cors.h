#pragma once
// Cross-origin requests (--cors-origin): which web pages may call the API from a browser.
//
// Allowed origins are "*" (any) or exact origins ("https://app.example.com",
// "http://localhost:3000"). For a request whose Origin header is allowed, every response
// carries Access-Control-Allow-Origin (the origin echoed back) and Vary: Origin, and
// exposes X-Request-Id and Retry-After to the page. A preflight (OPTIONS with Origin and
// Access-Control-Request-Method) from an allowed origin is answered with the methods and
// headers the API accepts. A request from any other origin gets no CORS headers at all,
// which makes the browser withhold the response from the page.
// No origins configured: CORS is off (no headers ever).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pagoda::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  CorsPolicy() = default;  // off

  // Each origin "*" or scheme://host[:port] (a trailing '/' is dropped; scheme and host
  // are compared case-insensitively, as browsers send them in lower case). Errors name
  // the offending entry.
  static Expected<CorsPolicy> create(const std::vector<std::string>& origins);

  bool enabled() const { return any_origin_ || !origins_.empty(); }
  bool allows(std::string_view origin) const;

  // Headers to add to a response to a request with this Origin header value (empty
  // when there is none or it is not allowed).
  HeaderList response_headers(std::string_view origin) const;

  // Whether a request is a CORS preflight: OPTIONS with Origin and
  // Access-Control-Request-Method.
  static bool is_preflight(std::string_view method, std::string_view origin,
                           std::string_view access_control_request_method);
  // Headers for the answer to a preflight (sent with 204 No Content); empty when the
  // origin is not allowed. requested_headers: the Access-Control-Request-Headers value;
  // the headers it names are allowed too (SDKs add their own, e.g. X-Stainless-*)
  // when they are well-formed header names.
  HeaderList preflight_headers(std::string_view origin, std::string_view requested_headers) const;

  static constexpr int kMaxAgeSeconds = 3600;

 private:
  bool any_origin_ = false;
  std::vector<std::string> origins_;  // normalized: lower case, no trailing '/'
};

}  // namespace pagoda::server
