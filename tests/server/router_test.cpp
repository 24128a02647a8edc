#include "server/service/router.h"

#include <gtest/gtest.h>

namespace pagoda::server {
namespace {

namespace http = boost::beast::http;

TEST(Router, EveryEndpointWithItsMethod) {
  const struct {
    http::verb method;
    std::string_view target;
    Endpoint endpoint;
  } cases[] = {
      {http::verb::post, "/v1/chat/completions", Endpoint::kChatCompletions},
      {http::verb::post, "/v1/completions", Endpoint::kCompletions},
      {http::verb::get, "/v1/models", Endpoint::kModels},
      {http::verb::get, "/v1/models/smol", Endpoint::kModel},
      {http::verb::post, "/tokenize", Endpoint::kTokenize},
      {http::verb::post, "/detokenize", Endpoint::kDetokenize},
      {http::verb::get, "/health", Endpoint::kHealth},
      {http::verb::get, "/metrics", Endpoint::kMetrics},
  };
  for (const auto& c : cases) {
    const RouteMatch match = route(c.method, c.target);
    ASSERT_TRUE(match.endpoint.has_value()) << c.target;
    EXPECT_EQ(*match.endpoint, c.endpoint) << c.target;
    EXPECT_TRUE(match.path_exists);
  }
}

TEST(Router, QueryStringIsIgnored) {
  const RouteMatch match = route(http::verb::get, "/metrics?name=x#frag");
  ASSERT_TRUE(match.endpoint.has_value());
  EXPECT_EQ(*match.endpoint, Endpoint::kMetrics);
}

TEST(Router, WrongMethodIsKnownPathWithAllow) {
  RouteMatch match = route(http::verb::get, "/v1/chat/completions");
  EXPECT_FALSE(match.endpoint.has_value());
  EXPECT_TRUE(match.path_exists);
  EXPECT_EQ(match.allow, "POST");
  match = route(http::verb::delete_, "/v1/models/x");
  EXPECT_FALSE(match.endpoint.has_value());
  EXPECT_TRUE(match.path_exists);
  EXPECT_EQ(match.allow, "GET");
  EXPECT_TRUE(match.model_id.empty());
}

TEST(Router, UnknownPathsAreNotFound) {
  for (const std::string_view target :
       {"/v1", "/v1/models/", "/v1/chat/completions/", "/v2/completions", "/healthz",
        "/v1/models/%zz", "/v1/models/a%00b", "/v1/models/a%2"}) {
    const RouteMatch match = route(http::verb::get, target);
    EXPECT_FALSE(match.endpoint.has_value()) << target;
    EXPECT_FALSE(match.path_exists) << target;
  }
}

// "/" is the chat page's (web_ui_test.cpp); without it, it is unknown.
TEST(Router, RootIsUnknownWithoutTheWebUi) {
  const RouteMatch match = route(http::verb::get, "/", {.web_ui = false});
  EXPECT_FALSE(match.endpoint.has_value());
  EXPECT_FALSE(match.path_exists);
}

TEST(Router, ModelIdsMayHoldSlashesAndEscapes) {
  RouteMatch match = route(http::verb::get, "/v1/models/HuggingFaceTB/SmolLM2-135M");
  ASSERT_TRUE(match.endpoint.has_value());
  EXPECT_EQ(match.model_id, "HuggingFaceTB/SmolLM2-135M");
  match = route(http::verb::get, "/v1/models/my%20model%2Fq4?x=1");
  EXPECT_EQ(match.model_id, "my model/q4");
}

TEST(Router, PercentDecode) {
  EXPECT_EQ(percent_decode("a%41%62c"), "aAbc");
  EXPECT_EQ(percent_decode(""), "");
  EXPECT_FALSE(percent_decode("%").has_value());
  EXPECT_FALSE(percent_decode("%4").has_value());
  EXPECT_FALSE(percent_decode("%g1").has_value());
  EXPECT_FALSE(percent_decode("%00").has_value());
}

TEST(Router, LabelsArePathPatterns) {
  EXPECT_EQ(endpoint_label(Endpoint::kModel), "/v1/models/{id}");
  EXPECT_EQ(endpoint_label(Endpoint::kChatCompletions), "/v1/chat/completions");
}

TEST(Router, TheMetricsGoWhereTheOperatorPutsThem) {
  const RouteOptions moved{.metrics_path = "/internal/prometheus"};
  RouteMatch match = route(http::verb::get, "/internal/prometheus?x=1", moved);
  ASSERT_TRUE(match.endpoint);
  EXPECT_EQ(*match.endpoint, Endpoint::kMetrics);
  EXPECT_FALSE(route(http::verb::get, "/metrics", moved).path_exists);  // not there any more
  match = route(http::verb::post, "/internal/prometheus", moved);
  EXPECT_TRUE(match.path_exists);
  EXPECT_FALSE(match.endpoint);
  EXPECT_EQ(match.allow, "GET");
  const RouteMatch off = route(http::verb::get, "/metrics", {.metrics = false});
  EXPECT_FALSE(off.path_exists);
  EXPECT_FALSE(off.endpoint);
}

TEST(Router, AMetricsPathMustBeNewAndAbsolute) {
  EXPECT_TRUE(check_metrics_path("/prom").ok());
  EXPECT_TRUE(check_metrics_path("/metrics").ok());
  EXPECT_EQ(check_metrics_path("metrics").message(),
            "'metrics' is not an absolute path (it must start with '/')");
  EXPECT_EQ(check_metrics_path("/health").message(), "'/health' is a path the server already serves");
  EXPECT_EQ(check_metrics_path("/v1/metrics").message(),
            "'/v1/metrics' is a path the server already serves");
  EXPECT_EQ(check_metrics_path("/").message(), "'/' is a path the server already serves");
  EXPECT_FALSE(check_metrics_path("/m?x").ok());
}

}  // namespace
}  // namespace pagoda::server
