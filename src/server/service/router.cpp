#include "server/service/router.h"

#include <array>

namespace pagoda::server {
namespace {

namespace http = boost::beast::http;

struct FixedRoute {
  std::string_view path;
  http::verb method;
  Endpoint endpoint;
};

constexpr std::array<FixedRoute, 6> kFixedRoutes = {{
    {"/v1/chat/completions", http::verb::post, Endpoint::kChatCompletions},
    {"/v1/completions", http::verb::post, Endpoint::kCompletions},
    {"/v1/models", http::verb::get, Endpoint::kModels},
    {"/tokenize", http::verb::post, Endpoint::kTokenize},
    {"/detokenize", http::verb::post, Endpoint::kDetokenize},
    {"/health", http::verb::get, Endpoint::kHealth},
}};

constexpr std::string_view kApiPrefix = "/v1/";  // every path under it is the API's
constexpr std::string_view kModelPrefix = "/v1/models/";

std::string_view method_name(http::verb method) {
  return method == http::verb::post ? "POST" : "GET";
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view endpoint_label(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kChatCompletions:
      return "/v1/chat/completions";
    case Endpoint::kCompletions:
      return "/v1/completions";
    case Endpoint::kModels:
      return "/v1/models";
    case Endpoint::kModel:
      return "/v1/models/{id}";
    case Endpoint::kTokenize:
      return "/tokenize";
    case Endpoint::kDetokenize:
      return "/detokenize";
    case Endpoint::kHealth:
      return "/health";
    case Endpoint::kMetrics:
      return "/metrics";
    case Endpoint::kWebUi:
      return "webui";
  }
  return "";
}

std::string_view target_path(std::string_view target) {
  const size_t end = target.find_first_of("?#");
  return end == std::string_view::npos ? target : target.substr(0, end);
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;  // "%" or "%X" at the end
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    const char decoded = static_cast<char>(high * 16 + low);
    if (decoded == '\0') return std::nullopt;
    out.push_back(decoded);
    i += 2;
  }
  return out;
}

namespace {

// 'path', built by appends (GCC 12 warns, wrongly, of overlapping copies in a chain of
// string + string_view concatenations).
std::string quoted(std::string_view path) {
  std::string text = "'";
  text.append(path);
  text += '\'';
  return text;
}

}  // namespace

Status check_metrics_path(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return invalid_argument(quoted(path) + " is not an absolute path (it must start with '/')");
  }
  bool api_path = path == "/" || path.starts_with(kApiPrefix) || find_web_asset(path) != nullptr;
  for (const FixedRoute& fixed : kFixedRoutes) api_path = api_path || fixed.path == path;
  if (api_path) return invalid_argument(quoted(path) + " is a path the server already serves");
  if (path.find_first_of("?#") != std::string_view::npos) {
    return invalid_argument(quoted(path) + " holds a query or fragment");
  }
  return Status::ok_status();
}

RouteMatch route(http::verb method, std::string_view target, const RouteOptions& options) {
  const std::string_view path = target_path(target);
  RouteMatch match;
  if (options.metrics && path == options.metrics_path) {
    match.path_exists = true;
    match.allow = "GET";
    if (method == http::verb::get) match.endpoint = Endpoint::kMetrics;
    return match;
  }
  for (const FixedRoute& fixed : kFixedRoutes) {
    if (fixed.path != path) continue;
    match.path_exists = true;
    match.allow = method_name(fixed.method);
    if (method == fixed.method) match.endpoint = fixed.endpoint;
    return match;
  }
  if (const WebAsset* asset = options.web_ui ? find_web_asset(path) : nullptr) {
    match.path_exists = true;
    match.allow = "GET, HEAD";
    if (method == http::verb::get || method == http::verb::head) {
      match.endpoint = Endpoint::kWebUi;
      match.web_asset = asset;
    }
    return match;
  }
  if (path.size() > kModelPrefix.size() && path.starts_with(kModelPrefix)) {
    std::optional<std::string> id = percent_decode(path.substr(kModelPrefix.size()));
    if (!id) return match;  // not a path we serve
    match.path_exists = true;
    match.allow = "GET";
    if (method == http::verb::get) {
      match.endpoint = Endpoint::kModel;
      match.model_id = std::move(*id);
    }
  }
  return match;
}

}  // namespace pagoda::server
