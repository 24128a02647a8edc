#pragma once
// The chat page's files (web/ in the repository), embedded into the binary at build time:
// each file's bytes, its gzip form (gzip -9n, made by the build) and an ETag from the
// SHA-256 of its bytes. The table itself is generated (web_assets_data.cpp in the build
// folder, by cmake/EmbedWebAssets.cmake).
//
//   GET /            -> web/index.html
//   GET /index.html  -> web/index.html
//   GET /app.js      -> web/app.js          (every file of web/ by its name)

#include <span>
#include <string_view>

namespace pagoda::server {

struct WebAsset {
  std::string_view path;          // "/index.html": '/' and the file's name under web/
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view bytes;         // the file as it is in web/
  std::string_view gzip_bytes;    // the same, gzip-compressed
  std::string_view etag;          // "\"<hex>\"": quoted, strong, from the file's bytes
};

// Every embedded file, in path order.
std::span<const WebAsset> web_assets();

// The file a request path names ("/" is "/index.html"); nullptr when there is none.
const WebAsset* find_web_asset(std::string_view path);

// The Content-Type of a file by its extension: html, css, js, json, svg, png, ico, txt;
// "application/octet-stream" for others.
std::string_view web_content_type(std::string_view path);

}  // namespace pagoda::server
