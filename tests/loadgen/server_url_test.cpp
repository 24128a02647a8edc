#include "loadgen/server_url.h"

#include <gtest/gtest.h>

namespace pagoda::loadgen {
namespace {

TEST(ServerUrl, HostPortAndPrefix) {
  auto url = parse_server_url("http://127.0.0.1:8080");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->path_prefix, "");
  EXPECT_EQ(url->target("/v1/models"), "/v1/models");
  EXPECT_EQ(url->host_header(), "127.0.0.1:8080");

  auto prefixed = parse_server_url("http://gpu-box:9000/api/");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->path_prefix, "/api");
  EXPECT_EQ(prefixed->target("/v1/completions"), "/api/v1/completions");
  EXPECT_EQ(prefixed->to_string(), "http://gpu-box:9000/api");
}

TEST(ServerUrl, DefaultsAndIpv6) {
  auto bare = parse_server_url("localhost");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->host, "localhost");
  EXPECT_EQ(bare->port, 80);
  auto v6 = parse_server_url("http://[::1]:8000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8000);
  EXPECT_EQ(v6->host_header(), "[::1]:8000");
}

TEST(ServerUrl, RejectsWhatItCannotServe) {
  for (const char* bad :
       {"https://example.com", "ftp://x", "http://", "http://:80", "http://host:0",
        "http://host:", "http://host:65536", "http://host:12ab", "http://user@host",
        "http://host/path?q=1", "http://[::1", "http://[::1]x"}) {
    EXPECT_FALSE(parse_server_url(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace pagoda::loadgen
