#pragma once
// Where the benchmarked server listens: "http://host:port/prefix". Only plain HTTP:
// the load generator measures servers on the same machine or network, and TLS
// would put its own cost into every timing.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace pagoda::loadgen {

struct ServerUrl {
  std::string host;  // "127.0.0.1", "localhost", "::1" (without brackets)
  uint16_t port = 80;
  std::string path_prefix;  // "" or "/prefix" (no trailing slash), put before every path

  // "host:port" as the HTTP Host header wants it (IPv6 literals bracketed).
  std::string host_header() const;
  // path_prefix + path; `path` starts with '/'.
  std::string target(std::string_view path) const;
  std::string to_string() const;  // "http://host:port/prefix"
};

// Parses "http://host[:port][/prefix]"; a missing scheme means http. Anything else
// (https, user info, a query, a bad port) is an InvalidArgument naming the problem.
Expected<ServerUrl> parse_server_url(std::string_view text);

}  // namespace pagoda::loadgen
