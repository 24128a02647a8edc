#include "server/webui/web_assets.h"

#include <algorithm>
#include <array>
#include <utility>

namespace pagoda::server {

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  const std::span<const WebAsset> assets = web_assets();
  const auto it = std::find_if(assets.begin(), assets.end(),
                               [&](const WebAsset& asset) { return asset.path == path; });
  return it == assets.end() ? nullptr : &*it;
}

std::string_view web_content_type(std::string_view path) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> kTypes = {{
      {".html", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".json", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
  }};
  for (const auto& [extension, type] : kTypes) {
    if (path.ends_with(extension)) return type;
  }
  return "application/octet-stream";
}

}  // namespace pagoda::server
