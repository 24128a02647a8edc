#include "server/service/cors.h"

#include <algorithm>

#include "core/ascii.h"

namespace pagoda::server {
namespace {

constexpr std::string_view kAllowedMethods = "GET, POST, OPTIONS";
// Authorization is never covered by a "*" in Access-Control-Allow-Headers, so the
// headers the API reads are listed by name.
constexpr std::string_view kBaseAllowedHeaders[] = {"Authorization", "Content-Type", "X-Request-Id"};
constexpr std::string_view kExposedHeaders = "X-Request-Id, Retry-After";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// An HTTP token (RFC 9110 tchar): what a header name may be made of.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) return false;
  }
  return true;
}

// scheme "://" host [":" port], nothing else.
bool is_origin(std::string_view origin) {
  const size_t separator = origin.find("://");
  if (separator == std::string_view::npos || separator == 0) return false;
  for (char c : origin.substr(0, separator)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
    if (!ok) return false;
  }
  const std::string_view authority = origin.substr(separator + 3);
  if (authority.empty() || authority.front() == ':') return false;
  for (char c : authority) {
    if (c == '/' || c == '?' || c == '#' || c == '@' || static_cast<unsigned char>(c) <= 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f) {
      return false;
    }
  }
  return true;
}

// The base headers, then each well-formed requested one not listed yet.
std::string allowed_headers(std::string_view requested) {
  std::vector<std::string> names(std::begin(kBaseAllowedHeaders), std::end(kBaseAllowedHeaders));
  while (!requested.empty()) {
    const size_t comma = std::min(requested.find(','), requested.size());
    const std::string_view name = trim(requested.substr(0, comma));
    requested.remove_prefix(std::min(comma + 1, requested.size()));
    if (!is_token(name)) continue;
    const bool listed = std::any_of(names.begin(), names.end(),
                                    [&](const std::string& n) { return ascii_iequals(n, name); });
    if (!listed) names.emplace_back(name);
  }
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace

Expected<CorsPolicy> CorsPolicy::create(const std::vector<std::string>& origins) {
  CorsPolicy policy;
  for (size_t i = 0; i < origins.size(); ++i) {
    std::string origin = ascii_to_lower(trim(origins[i]));
    if (origin == "*") {
      policy.any_origin_ = true;
      continue;
    }
    if (!origin.empty() && origin.back() == '/') origin.pop_back();
    if (!is_origin(origin)) {
      return invalid_argument("cors origin '" + origins[i] +
                              "' is not \"*\" or scheme://host[:port] (e.g. http://localhost:3000)");
    }
    if (std::find(policy.origins_.begin(), policy.origins_.end(), origin) == policy.origins_.end()) {
      policy.origins_.push_back(std::move(origin));
    }
  }
  return policy;
}

bool CorsPolicy::allows(std::string_view origin) const {
  // Only a well-formed origin is ever echoed back (not "null", not anything odd).
  if (!is_origin(ascii_to_lower(origin))) return false;
  if (any_origin_) return true;
  return std::any_of(origins_.begin(), origins_.end(),
                     [&](const std::string& allowed) { return ascii_iequals(allowed, origin); });
}

HeaderList CorsPolicy::response_headers(std::string_view origin) const {
  if (!allows(origin)) return {};
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers", std::string(kExposedHeaders)}};
}

bool CorsPolicy::is_preflight(std::string_view method, std::string_view origin,
                              std::string_view access_control_request_method) {
  return method == "OPTIONS" && !origin.empty() && !access_control_request_method.empty();
}

HeaderList CorsPolicy::preflight_headers(std::string_view origin,
                                         std::string_view requested_headers) const {
  if (!allows(origin)) return {};
  return {{"Access-Control-Allow-Origin", std::string(origin)},
          {"Vary", "Origin"},
          {"Access-Control-Allow-Methods", std::string(kAllowedMethods)},
          {"Access-Control-Allow-Headers", allowed_headers(requested_headers)},
          {"Access-Control-Max-Age", std::to_string(kMaxAgeSeconds)}};
}

}  // namespace pagoda::server
