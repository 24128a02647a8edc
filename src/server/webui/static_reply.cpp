#include "server/webui/static_reply.h"

#include <cctype>
#include <charconv>

namespace pagoda::server {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Calls `visit(item)` for each comma-separated item of a header value, trimmed, empty
// items skipped.
template <class Visit>
void for_each_item(std::string_view list, Visit visit) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    if (!item.empty()) visit(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

// The q-value of one Accept-Encoding item ("gzip;q=0.5" -> 0.5); 1 without one, 0 for a
// malformed one (a client that writes nonsense gets the plain file).
double q_value(std::string_view parameters) {
  double q = 1.0;
  while (!parameters.empty()) {
    const size_t semicolon = parameters.find(';');
    const std::string_view parameter = trim(parameters.substr(0, semicolon));
    if (parameter.size() > 2 && (parameter[0] == 'q' || parameter[0] == 'Q') &&
        parameter[1] == '=') {
      const std::string_view number = parameter.substr(2);
      const auto result = std::from_chars(number.data(), number.data() + number.size(), q);
      if (result.ec != std::errc() || result.ptr != number.data() + number.size()) return 0.0;
    }
    if (semicolon == std::string_view::npos) break;
    parameters.remove_prefix(semicolon + 1);
  }
  return q;
}

// "\"abc\"" -> "abc" with any W/ prefix dropped, for the weak comparison.
std::string_view opaque_tag(std::string_view tag) {
  if (tag.starts_with("W/")) tag.remove_prefix(2);
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') {
    tag = tag.substr(1, tag.size() - 2);
  }
  return tag;
}

// The gzip form is another representation, so it has its own tag: "\"abc\"" -> "\"abc-gzip\"".
std::string gzip_etag(std::string_view etag) {
  return "\"" + std::string(opaque_tag(etag)) + "-gzip\"";
}

}  // namespace

bool accepts_gzip(std::string_view accept_encoding) {
  double gzip_q = -1.0;  // -1: not named
  double any_q = -1.0;
  for_each_item(accept_encoding, [&](std::string_view item) {
    const size_t semicolon = item.find(';');
    const std::string_view coding = trim(item.substr(0, semicolon));
    const double q = semicolon == std::string_view::npos ? 1.0 : q_value(item.substr(semicolon + 1));
    if (equals_ignoring_case(coding, "gzip") || equals_ignoring_case(coding, "x-gzip")) {
      gzip_q = q;
    } else if (coding == "*") {
      any_q = q;
    }
  });
  if (gzip_q >= 0.0) return gzip_q > 0.0;
  return any_q > 0.0;
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  bool matched = false;
  for_each_item(if_none_match, [&](std::string_view item) {
    if (item == "*" || opaque_tag(item) == opaque_tag(etag)) matched = true;
  });
  return matched;
}

StaticReply static_reply(const WebAsset& asset, std::string_view accept_encoding,
                         std::string_view if_none_match) {
  const bool gzip = accepts_gzip(accept_encoding);
  const std::string identity_tag(asset.etag);
  const std::string gzip_tag = gzip_etag(asset.etag);
  const std::string& chosen_tag = gzip ? gzip_tag : identity_tag;
  const std::string& other_tag = gzip ? identity_tag : gzip_tag;
  StaticReply reply;
  reply.content_type = asset.content_type;
  reply.headers = {
      {"ETag", chosen_tag}, {"Cache-Control", "no-cache"}, {"Vary", "Accept-Encoding"}};
  // Either tag names a current copy (the client may have cached the other encoding of
  // the same bytes); the 304 then names the one it holds.
  if (etag_matches(if_none_match, chosen_tag)) {
    reply.status = 304;
    return reply;
  }
  if (etag_matches(if_none_match, other_tag)) {
    reply.headers[0].second = other_tag;
    reply.status = 304;
    return reply;
  }
  reply.status = 200;
  reply.body = gzip ? asset.gzip_bytes : asset.bytes;
  if (gzip) reply.headers.emplace_back("Content-Encoding", "gzip");
  reply.headers.emplace_back("Content-Security-Policy", std::string(kWebContentSecurityPolicy));
  reply.headers.emplace_back("X-Content-Type-Options", "nosniff");
  reply.headers.emplace_back("Referrer-Policy", "no-referrer");
  reply.headers.emplace_back("X-Frame-Options", "DENY");
  return reply;
}

}  // namespace pagoda::server
