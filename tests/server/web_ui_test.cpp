// The chat page's static files: the embedded table against web/ on disk (bytes, gzip
// form, ETags), the reply rules (gzip negotiation, ETag / 304, security headers) and the
// routes. The page served through ApiService is tested in api_service_test.cpp.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "server/service/router.h"
#include "server/webui/static_reply.h"
#include "server/webui/web_assets.h"

namespace pagoda::server {
namespace {

namespace http = boost::beast::http;

const std::filesystem::path kWebDir = std::filesystem::path(PAGODA_SOURCE_DIR) / "web";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// CRC-32 (IEEE 802.3, as gzip's trailer), bit by bit: slow and obviously right.
uint32_t crc32(std::string_view bytes) {
  uint32_t crc = 0xffffffffu;
  for (const char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t little_endian_u32(std::string_view bytes) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::string header_of(const StaticReply& reply, std::string_view name) {
  for (const auto& [key, value] : reply.headers) {
    if (key == name) return value;
  }
  return "(absent)";
}

const WebAsset& page() {
  const WebAsset* asset = find_web_asset("/index.html");
  EXPECT_NE(asset, nullptr);
  return *asset;
}

TEST(WebAssets, EveryFileOfWebIsEmbeddedAsItIsOnDisk) {
  std::set<std::string> on_disk;
  for (const auto& entry : std::filesystem::directory_iterator(kWebDir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".")) continue;
    on_disk.insert("/" + name);
    const WebAsset* asset = find_web_asset("/" + name);
    ASSERT_NE(asset, nullptr) << name;
    EXPECT_EQ(asset->bytes, read_file(entry.path())) << name;
    EXPECT_EQ(asset->content_type, web_content_type(name));
  }
  std::set<std::string> embedded;
  for (const WebAsset& asset : web_assets()) embedded.insert(std::string(asset.path));
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(on_disk.contains("/index.html"));
}

// gzip's header (1f 8b, deflate) and trailer (CRC-32 and size of the original) must
// describe the file's bytes; the compressed form must be smaller.
TEST(WebAssets, GzipFormsAreOfTheirFiles) {
  for (const WebAsset& asset : web_assets()) {
    const std::string_view gz = asset.gzip_bytes;
    ASSERT_GT(gz.size(), 18u) << asset.path;
    EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f) << asset.path;
    EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b) << asset.path;
    EXPECT_EQ(gz[2], 8) << asset.path;  // deflate
    EXPECT_EQ(gz[3] & 0x08, 0) << asset.path;  // no file name (gzip -n)
    EXPECT_EQ(little_endian_u32(gz.substr(gz.size() - 8, 4)), crc32(asset.bytes)) << asset.path;
    EXPECT_EQ(little_endian_u32(gz.substr(gz.size() - 4, 4)), asset.bytes.size()) << asset.path;
    EXPECT_LT(gz.size(), asset.bytes.size()) << asset.path;
  }
}

TEST(WebAssets, EtagsAreQuotedHexAndDifferByContent) {
  std::set<std::string_view> tags;
  for (const WebAsset& asset : web_assets()) {
    ASSERT_EQ(asset.etag.size(), 34u) << asset.path;
    EXPECT_EQ(asset.etag.front(), '"');
    EXPECT_EQ(asset.etag.back(), '"');
    EXPECT_EQ(asset.etag.substr(1, 32).find_first_not_of("0123456789abcdef"),
              std::string_view::npos);
    tags.insert(asset.etag);
  }
  EXPECT_EQ(tags.size(), web_assets().size());
}

TEST(WebAssets, LookupAndContentTypes) {
  EXPECT_EQ(find_web_asset("/"), find_web_asset("/index.html"));
  EXPECT_EQ(find_web_asset("/nothing.html"), nullptr);
  EXPECT_EQ(find_web_asset("index.html"), nullptr);
  EXPECT_EQ(find_web_asset("/../web/index.html"), nullptr);
  EXPECT_EQ(find_web_asset("/v1/models"), nullptr);
  EXPECT_EQ(find_web_asset(""), nullptr);
  EXPECT_EQ(web_content_type("/index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(web_content_type("/app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(web_content_type("/style.css"), "text/css; charset=utf-8");
  EXPECT_EQ(web_content_type("/icon.svg"), "image/svg+xml");
  EXPECT_EQ(web_content_type("/data.bin"), "application/octet-stream");
}

TEST(StaticReply, AcceptEncodingNegotiation) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("gzip, deflate, br"));
  EXPECT_TRUE(accepts_gzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("x-gzip"));
  EXPECT_TRUE(accepts_gzip("*"));
  EXPECT_TRUE(accepts_gzip("identity, *;q=0.1"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("identity"));
  EXPECT_FALSE(accepts_gzip("deflate, br"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0.000"));
  EXPECT_FALSE(accepts_gzip("*, gzip;q=0"));  // named explicitly: the refusal wins
  EXPECT_FALSE(accepts_gzip("*;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip;q=nonsense"));
  EXPECT_FALSE(accepts_gzip("gzipped"));
}

TEST(StaticReply, EtagComparisonIsWeak) {
  EXPECT_TRUE(etag_matches("\"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("W/\"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("\"x\", \"abc\"", "\"abc\""));
  EXPECT_TRUE(etag_matches("*", "\"abc\""));
  EXPECT_FALSE(etag_matches("", "\"abc\""));
  EXPECT_FALSE(etag_matches("\"abcd\"", "\"abc\""));
  EXPECT_FALSE(etag_matches("\"ab\", \"c\"", "\"abc\""));
}

TEST(StaticReply, PlainReplyCarriesTheFileAndTheSecurityHeaders) {
  const WebAsset& asset = page();
  const StaticReply reply = static_reply(asset, "", "");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(reply.body, asset.bytes);
  EXPECT_EQ(header_of(reply, "ETag"), asset.etag);
  EXPECT_EQ(header_of(reply, "Cache-Control"), "no-cache");
  EXPECT_EQ(header_of(reply, "Vary"), "Accept-Encoding");
  EXPECT_EQ(header_of(reply, "Content-Encoding"), "(absent)");
  EXPECT_EQ(header_of(reply, "Content-Security-Policy"), kWebContentSecurityPolicy);
  EXPECT_EQ(header_of(reply, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(header_of(reply, "X-Frame-Options"), "DENY");
  EXPECT_EQ(header_of(reply, "Referrer-Policy"), "no-referrer");
  // The policy allows no inline script and no other origin.
  EXPECT_NE(kWebContentSecurityPolicy.find("default-src 'none'"), std::string_view::npos);
  EXPECT_NE(kWebContentSecurityPolicy.find("script-src 'self';"), std::string_view::npos);
  EXPECT_EQ(kWebContentSecurityPolicy.find("unsafe"), std::string_view::npos);
}

TEST(StaticReply, GzipReplyHasItsOwnTag) {
  const WebAsset& asset = page();
  const StaticReply reply = static_reply(asset, "gzip, deflate", "");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, asset.gzip_bytes);
  EXPECT_EQ(header_of(reply, "Content-Encoding"), "gzip");
  const std::string gzip_tag =
      "\"" + std::string(asset.etag.substr(1, asset.etag.size() - 2)) + "-gzip\"";
  EXPECT_EQ(header_of(reply, "ETag"), gzip_tag);
}

TEST(StaticReply, CurrentCopyIs304WithoutBody) {
  const WebAsset& asset = page();
  const StaticReply plain = static_reply(asset, "", std::string(asset.etag));
  EXPECT_EQ(plain.status, 304);
  EXPECT_TRUE(plain.body.empty());
  EXPECT_EQ(header_of(plain, "ETag"), asset.etag);
  EXPECT_EQ(header_of(plain, "Cache-Control"), "no-cache");
  EXPECT_EQ(header_of(plain, "Content-Security-Policy"), "(absent)");

  const StaticReply gzip = static_reply(asset, "gzip", "");
  const std::string gzip_tag = header_of(gzip, "ETag");
  EXPECT_EQ(static_reply(asset, "gzip", gzip_tag).status, 304);
  EXPECT_EQ(header_of(static_reply(asset, "gzip", gzip_tag), "ETag"), gzip_tag);
  // A copy cached in the other encoding is as current: its own tag comes back.
  const StaticReply cross = static_reply(asset, "", gzip_tag);
  EXPECT_EQ(cross.status, 304);
  EXPECT_EQ(header_of(cross, "ETag"), gzip_tag);
  EXPECT_EQ(static_reply(asset, "gzip", "W/" + std::string(asset.etag)).status, 304);

  const StaticReply stale = static_reply(asset, "", "\"0123\"");
  EXPECT_EQ(stale.status, 200);
  EXPECT_EQ(stale.body, asset.bytes);
  // Another file's tag is not this file's.
  const WebAsset* script = find_web_asset("/app.js");
  ASSERT_NE(script, nullptr);
  EXPECT_EQ(static_reply(asset, "", std::string(script->etag)).status, 200);
}

TEST(WebRoutes, PageFilesAreGetAndHeadOnly) {
  RouteMatch match = route(http::verb::get, "/");
  ASSERT_TRUE(match.endpoint.has_value());
  EXPECT_EQ(*match.endpoint, Endpoint::kWebUi);
  EXPECT_EQ(match.web_asset, find_web_asset("/index.html"));
  match = route(http::verb::head, "/index.html?x=1");
  ASSERT_TRUE(match.endpoint.has_value());
  EXPECT_EQ(match.web_asset, find_web_asset("/index.html"));
  match = route(http::verb::get, "/app.js");
  ASSERT_TRUE(match.endpoint.has_value());
  EXPECT_EQ(match.web_asset, find_web_asset("/app.js"));
  match = route(http::verb::post, "/");
  EXPECT_FALSE(match.endpoint.has_value());
  EXPECT_TRUE(match.path_exists);
  EXPECT_EQ(match.allow, "GET, HEAD");
  match = route(http::verb::get, "/favicon.ico");
  EXPECT_FALSE(match.endpoint.has_value());
  EXPECT_FALSE(match.path_exists);
  EXPECT_EQ(endpoint_label(Endpoint::kWebUi), "webui");
}

TEST(WebRoutes, OffTheyAreUnknownAndTheApiIsUnchanged) {
  for (const std::string_view path : {"/", "/index.html", "/app.js"}) {
    const RouteMatch match = route(http::verb::get, path, {.web_ui = false});
    EXPECT_FALSE(match.endpoint.has_value()) << path;
    EXPECT_FALSE(match.path_exists) << path;
  }
  const RouteMatch models = route(http::verb::get, "/v1/models", {.web_ui = false});
  ASSERT_TRUE(models.endpoint.has_value());
  EXPECT_EQ(*models.endpoint, Endpoint::kModels);
}

}  // namespace
}  // namespace pagoda::server
