#include "loadgen/server_url.h"

#include <charconv>

namespace pagoda::loadgen {
namespace {

Expected<uint16_t> parse_port(std::string_view text, std::string_view url) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > 65535)
    return invalid_argument("url '" + std::string(url) + "': port '" + std::string(text) +
                            "' is not a number in 1..65535");
  return static_cast<uint16_t>(value);
}

// Splits "host[:port]" or "[v6]:port" into host and port text.
Expected<std::pair<std::string_view, std::string_view>> split_authority(std::string_view authority,
                                                                        std::string_view url) {
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos)
      return invalid_argument("url '" + std::string(url) + "': unclosed '[' in the host");
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':'))
      return invalid_argument("url '" + std::string(url) + "': junk after the IPv6 host");
    return std::pair{authority.substr(1, close - 1), rest.empty() ? rest : rest.substr(1)};
  }
  const size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos) return std::pair{authority, std::string_view{}};
  return std::pair{authority.substr(0, colon), authority.substr(colon + 1)};
}

}  // namespace

std::string ServerUrl::host_header() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string ServerUrl::target(std::string_view path) const {
  return path_prefix + std::string(path);
}

std::string ServerUrl::to_string() const {
  return "http://" + host_header() + path_prefix;
}

Expected<ServerUrl> parse_server_url(std::string_view text) {
  std::string_view rest = text;
  if (const size_t scheme_end = rest.find("://"); scheme_end != std::string_view::npos) {
    if (rest.substr(0, scheme_end) != "http")
      return invalid_argument("url '" + std::string(text) + "': only http:// is supported");
    rest.remove_prefix(scheme_end + 3);
  }
  if (rest.find_first_of("?#@") != std::string_view::npos)
    return invalid_argument("url '" + std::string(text) +
                            "': user info, query and fragment are not supported");
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  while (path.ends_with('/')) path.remove_suffix(1);

  if (authority.ends_with(':'))
    return invalid_argument("url '" + std::string(text) + "': empty port");
  PAGODA_ASSIGN_OR_RETURN(const auto parts, split_authority(authority, text));
  if (parts.first.empty()) return invalid_argument("url '" + std::string(text) + "': no host");
  ServerUrl url;
  url.host = std::string(parts.first);
  if (!parts.second.empty()) {
    PAGODA_ASSIGN_OR_RETURN(url.port, parse_port(parts.second, text));
  }
  url.path_prefix = std::string(path);
  return url;
}

}  // namespace pagoda::loadgen
