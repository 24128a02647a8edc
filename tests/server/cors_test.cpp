#include "server/service/cors.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

std::string header(const HeaderList& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return "<absent>";
}

CorsPolicy make(const std::vector<std::string>& origins) {
  Expected<CorsPolicy> policy = CorsPolicy::create(origins);
  EXPECT_TRUE(policy.ok()) << policy.status().message();
  return policy.ok() ? *policy : CorsPolicy{};
}

TEST(Cors, OffByDefault) {
  const CorsPolicy off = make({});
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.response_headers("https://example.com").empty());
  EXPECT_TRUE(off.preflight_headers("https://example.com", "").empty());
}

TEST(Cors, ExactOriginsAreEchoed) {
  const CorsPolicy cors = make({"https://App.Example.com/", "http://localhost:3000"});
  EXPECT_TRUE(cors.enabled());
  EXPECT_TRUE(cors.allows("https://app.example.com"));
  EXPECT_TRUE(cors.allows("http://localhost:3000"));
  EXPECT_FALSE(cors.allows("http://localhost:3001"));
  EXPECT_FALSE(cors.allows("https://app.example.com.evil.net"));
  EXPECT_FALSE(cors.allows("http://app.example.com"));  // another scheme
  EXPECT_FALSE(cors.allows(""));

  const HeaderList headers = cors.response_headers("http://localhost:3000");
  EXPECT_EQ(header(headers, "Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_EQ(header(headers, "Vary"), "Origin");
  EXPECT_EQ(header(headers, "Access-Control-Expose-Headers"), "X-Request-Id, Retry-After");
  EXPECT_EQ(header(headers, "Access-Control-Allow-Credentials"), "<absent>");
  EXPECT_TRUE(cors.response_headers("https://evil.net").empty());
  EXPECT_TRUE(cors.response_headers("").empty());
}

TEST(Cors, StarAllowsAnyWellFormedOrigin) {
  const CorsPolicy cors = make({"*"});
  EXPECT_TRUE(cors.allows("https://anything.example"));
  EXPECT_TRUE(cors.allows("http://127.0.0.1:8000"));
  EXPECT_FALSE(cors.allows("null"));  // sandboxed pages and file:// are not echoed
  EXPECT_FALSE(cors.allows("https://a.example/path"));
  EXPECT_EQ(header(cors.response_headers("https://anything.example"), "Access-Control-Allow-Origin"),
            "https://anything.example");
}

TEST(Cors, Preflight) {
  EXPECT_TRUE(CorsPolicy::is_preflight("OPTIONS", "https://a.example", "POST"));
  EXPECT_FALSE(CorsPolicy::is_preflight("OPTIONS", "https://a.example", ""));
  EXPECT_FALSE(CorsPolicy::is_preflight("OPTIONS", "", "POST"));
  EXPECT_FALSE(CorsPolicy::is_preflight("POST", "https://a.example", "POST"));

  const CorsPolicy cors = make({"https://a.example"});
  const HeaderList headers = cors.preflight_headers(
      "https://a.example", "content-type, authorization,X-Stainless-OS , bad header, x-stainless-os");
  EXPECT_EQ(header(headers, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(header(headers, "Vary"), "Origin");
  EXPECT_EQ(header(headers, "Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
  EXPECT_EQ(header(headers, "Access-Control-Allow-Headers"),
            "Authorization, Content-Type, X-Request-Id, X-Stainless-OS");
  EXPECT_EQ(header(headers, "Access-Control-Max-Age"), "3600");
  EXPECT_EQ(header(cors.preflight_headers("https://a.example", ""), "Access-Control-Allow-Headers"),
            "Authorization, Content-Type, X-Request-Id");
  EXPECT_TRUE(cors.preflight_headers("https://b.example", "content-type").empty());
}

TEST(Cors, RejectsMalformedOrigins) {
  for (const char* bad : {"localhost:3000", "https://", "https://a.example/app", "://a", "ht tp://a",
                          "https://a b", "null"}) {
    const Expected<CorsPolicy> policy = CorsPolicy::create({"https://ok.example", bad});
    ASSERT_FALSE(policy.ok()) << bad;
    EXPECT_NE(policy.status().message().find(std::string("'") + bad + "'"), std::string::npos)
        << policy.status().message();
  }
}

}  // namespace
}  // namespace pagoda::server
