#pragma once
// The HTTP reply to a GET of one embedded web file, decided without any I/O: 200 with the
// file (gzip-encoded when the client accepts it), or 304 when the client's cached copy
// is current. Every reply carries the page's security headers.
//
//   headers on both:  ETag, Cache-Control: no-cache (revalidate each time: a new binary
//                     brings a new page), Vary: Accept-Encoding
//   200 only:         Content-Encoding: gzip (when chosen), Content-Security-Policy,
//                     X-Content-Type-Options, Referrer-Policy, X-Frame-Options

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/webui/web_assets.h"

namespace pagoda::server {

// The page's Content-Security-Policy: its own scripts, styles and API only; no inline
// script or style, no plugins, no framing, no other origin.
inline constexpr std::string_view kWebContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'";

struct StaticReply {
  int status = 200;                // 200 or 304
  std::string_view content_type;   // the asset's
  std::string_view body;           // empty for 304; points into the embedded table
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type
};

// `accept_encoding` and `if_none_match` are the request's header values ("" when absent).
StaticReply static_reply(const WebAsset& asset, std::string_view accept_encoding,
                         std::string_view if_none_match);

// Whether an Accept-Encoding value lets us send gzip: "gzip" or "x-gzip", or "*" when
// gzip is not named, with a q-value above 0 ("gzip;q=0" refuses it).
bool accepts_gzip(std::string_view accept_encoding);

// Whether an If-None-Match value names `etag` ("*" names any). Weak comparison, as
// RFC 9110 13.1.2 asks: a W/ prefix on either side is ignored.
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace pagoda::server
