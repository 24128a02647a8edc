#pragma once
// Method + path -> endpoint, for the OpenAI-compatible API. A path that exists with
// another method is a 405 (with the methods it accepts, for the Allow header); a path
// that does not exist is a 404. The query string is ignored.
//
//   POST /v1/chat/completions   POST /v1/completions   GET /v1/models
//   GET  /v1/models/{id}        POST /tokenize         POST /detokenize
//   GET  /health                GET  /metrics
//   GET  /  /index.html  /<file>   the chat page's files (webui/web_assets.h); HEAD too
//
// Model ids may contain '/' ("HuggingFaceTB/SmolLM2-135M-Instruct") and are
// percent-decoded.

// clang-format off
#include <ostream>  // before Beast's verb.hpp: Boost 1.81's core string_view needs it complete
#include <boost/beast/http/verb.hpp>
// clang-format on
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

#include "server/webui/web_assets.h"

namespace pagoda::server {

enum class Endpoint {
  kChatCompletions,
  kCompletions,
  kModels,
  kModel,
  kTokenize,
  kDetokenize,
  kHealth,
  kMetrics,
  kWebUi,  // a file of the chat page
};

// The endpoint's path pattern ("/v1/models/{id}"), used as the metrics label.
std::string_view endpoint_label(Endpoint endpoint);

struct RouteMatch {
  std::optional<Endpoint> endpoint;  // set when both path and method match
  std::string model_id;              // kModel: the {id} part, percent-decoded
  bool path_exists = false;          // the path is known (then a method mismatch is a 405)
  std::string_view allow;            // the methods the path accepts, e.g. "GET"
  const WebAsset* web_asset = nullptr;  // kWebUi: the file
};

// What the operator turned on or moved: with `web_ui` false the chat page's paths are
// unknown (404), as with `serve --no-webui`; the Prometheus text is at `metrics_path`
// (`--metrics-path`), or nowhere with `metrics` false (`--no-metrics`).
struct RouteOptions {
  bool web_ui = true;
  bool metrics = true;
  std::string_view metrics_path = "/metrics";
};

RouteMatch route(boost::beast::http::verb method, std::string_view target,
                 const RouteOptions& options = {});

// A path the operator may serve the metrics at: absolute, and none of the API's own
// paths. Fails with the reason.
Status check_metrics_path(std::string_view path);

// The path of a request target: without the query string or fragment.
std::string_view target_path(std::string_view target);

// %XX sequences decoded; nullopt for a malformed escape or a decoded NUL byte.
std::optional<std::string> percent_decode(std::string_view text);

}  // namespace pagoda::server
