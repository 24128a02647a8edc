// The HTTP transport over real loopback sockets: whole responses, keep-alive,
// pipelining, limits, malformed input, HTTP/1.0, Expect, HEAD, request ids, handler
// failures, and many concurrent connections on two I/O threads.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "server/http/http_server.h"
#include "server/http_test_client.h"

namespace pagoda::server {
namespace {

using namespace testing;

// Answers "<METHOD> <target> <body>" as text/plain, so tests see what the handler saw.
asio::awaitable<void> echo(Exchange& exchange) {
  const HttpRequest& request = exchange.request();
  std::string text = std::string(request.method_string()) + " " + std::string(request.target());
  if (!request.body().empty()) text += " " + request.body();
  co_await exchange.respond(http::status::ok, std::move(text), "text/plain");
}

TEST(HttpServerTest, AnswersAWholeResponse) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.send(post_request("/v1/echo", R"({"a":1})")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->version, 11u);
  EXPECT_EQ(response->body, R"(POST /v1/echo {"a":1})");
  EXPECT_EQ(response->header("content-type"), "text/plain");
  EXPECT_EQ(response->header("content-length"), "21");
  EXPECT_EQ(response->header("server"), "pagoda");
  EXPECT_EQ(response->header("date").size(), 29u);  // "Sun, 06 Nov 1994 08:49:37 GMT"
  EXPECT_TRUE(response->keep_alive);
}

TEST(HttpServerTest, KeepsTheConnectionForASecondRequest) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/first")));
  const auto first = client.read_response();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->body, "GET /first");
  ASSERT_TRUE(client.send(get_request("/second")));
  const auto second = client.read_response();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body, "GET /second");
  EXPECT_EQ(server->open_connections(), 1u);
}

TEST(HttpServerTest, AnswersPipelinedRequestsInOrder) {
  // The first handler is the slowest, so answers in order prove the queueing.
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    const std::string target(exchange.request().target());
    if (target == "/1") co_await sleep_for(50ms);
    co_await exchange.respond(http::status::ok, target, "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/1") + post_request("/2", "body-2") + get_request("/3")));
  for (const char* expected : {"/1", "/2", "/3"}) {
    const auto response = client.read_response();
    ASSERT_TRUE(response) << expected;
    EXPECT_EQ(response->body, expected);
  }
}

TEST(HttpServerTest, ClosesAfterAConnectionCloseRequest) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/bye", "Connection: close\r\n")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_FALSE(response->keep_alive);
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(client.wait_closed());
}

TEST(HttpServerTest, Http10ClosesUnlessAskedToKeepAlive) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  {
    TestClient client(server->port());
    ASSERT_TRUE(client.send("GET /old HTTP/1.0\r\n\r\n"));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->version, 10u);
    EXPECT_EQ(response->body, "GET /old");
    EXPECT_FALSE(response->keep_alive);
    EXPECT_TRUE(client.wait_closed());
  }
  TestClient client(server->port());
  ASSERT_TRUE(client.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  const auto first = client.read_response();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->keep_alive);
  EXPECT_EQ(first->header("connection"), "keep-alive");
  ASSERT_TRUE(client.send("GET /b HTTP/1.0\r\n\r\n"));
  const auto second = client.read_response();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body, "GET /b");
}

TEST(HttpServerTest, ReadsAChunkedRequestBody) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send("POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "POST /c hello world");
}

TEST(HttpServerTest, AnswersExpect100ContinueBeforeTheBody) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send("POST /e HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(client.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(client.send("data"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "POST /e data");
}

TEST(HttpServerTest, RejectsABodyOverTheLimitWith413) {
  auto options = test_options();
  options.max_body_bytes = 1024;
  std::atomic<int> handled{0};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    ++handled;
    co_await echo(exchange);
  }, options);
  ASSERT_TRUE(server);
  {  // announced by Content-Length: refused from the head, without 100 Continue
    TestClient client(server->port());
    ASSERT_TRUE(client.send("POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 4096\r\nExpect: 100-continue\r\n\r\n"));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 413);
    EXPECT_EQ(response->header("content-type"), "application/json");
    EXPECT_EQ(response->body,
              R"({"error":{"message":"The request body is too large: the limit is 1024 bytes.",)"
              R"("type":"invalid_request_error","param":null,"code":"request_too_large"}})");
    EXPECT_FALSE(response->keep_alive);
    EXPECT_TRUE(client.wait_closed());
  }
  {  // chunks that add up to more than the limit, sent in full before reading
    TestClient client(server->port());
    const std::string chunk(800, 'x');
    ASSERT_TRUE(client.send("POST /big HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n320\r\n" + chunk +
                            "\r\n320\r\n" + chunk + "\r\n0\r\n\r\n"));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 413);
    EXPECT_TRUE(client.wait_closed());
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST(HttpServerTest, RejectsHugeHeadersWith431) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/", "X-Big: " + std::string(20000, 'a') + "\r\n")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 431);
  EXPECT_EQ(response->body,
            R"({"error":{"message":"request header fields are larger than the limit of 16384 bytes",)"
            R"("type":"invalid_request_error","param":null,"code":null}})");
  EXPECT_TRUE(client.wait_closed());
}

TEST(HttpServerTest, RejectsMalformedRequestsWith400AndCloses) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  const std::vector<std::string> garbage = {
      "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",           // a TLS hello
      "GET / HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n",                  // no colon
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  // a bad chunk size
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",                                            // no Host
      "GET nowhere HTTP/1.1\r\nHost: t\r\n\r\n",                          // a bad target
  };
  for (const std::string& request : garbage) {
    TestClient client(server->port());
    ASSERT_TRUE(client.send(request));
    const auto response = client.read_response();
    ASSERT_TRUE(response) << request;
    EXPECT_EQ(response->status, 400) << request;
    EXPECT_NE(response->body.find(R"("type":"invalid_request_error")"), std::string::npos) << response->body;
    EXPECT_TRUE(client.wait_closed()) << request;
  }
  TestClient client(server->port());  // the server is still fine
  ASSERT_TRUE(client.send(get_request("/ok")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "GET /ok");
}

TEST(HttpServerTest, RefusesOtherHttpVersionsAndTransferCodings) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  const std::pair<std::string, int> cases[] = {
      {"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505},
      {"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: something-else\r\n\r\nab", 417},
  };
  for (const auto& [request, status] : cases) {
    TestClient client(server->port());
    ASSERT_TRUE(client.send(request));
    const auto response = client.read_response();
    ASSERT_TRUE(response) << request;
    EXPECT_EQ(response->status, status) << request;
    EXPECT_TRUE(client.wait_closed());
  }
}

TEST(HttpServerTest, ServesAbsoluteFormAsOriginForm) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    const auto& request = exchange.request();
    co_await exchange.respond(http::status::ok, std::string(request.target()) + " " +
                                                    std::string(request[http::field::host]), "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send("GET http://example.com:8080/v1/models?x=1 HTTP/1.1\r\nHost: other\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "/v1/models?x=1 example.com:8080");
}

TEST(HttpServerTest, ReadsTheSchemeOfAnAbsoluteTargetWithoutRegardToCase) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    const auto& request = exchange.request();
    co_await exchange.respond(http::status::ok, std::string(request.target()) + " " +
                                                    std::string(request[http::field::host]), "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send("GET hTTp://h:1/v1/models HTTP/1.1\r\nHost: other\r\n\r\n"));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "/v1/models h:1");
  // A scheme with no authority is no target (the fuzzer's input, which once read past it).
  TestClient second(server->port());
  ASSERT_TRUE(second.send("GET httP:// HTTP/1.0\r\n\r\n"));
  const auto refused = second.read_response();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_NE(refused->body.find("invalid request target"), std::string::npos);
}

TEST(HttpServerTest, AnswersHeadWithTheHeadOnly) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    co_await exchange.respond(http::status::ok, "twelve bytes", "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send("HEAD / HTTP/1.1\r\nHost: t\r\n\r\n" + get_request("/")));
  const auto head = client.read_response(2s, /*head_request=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->header("content-length"), "12");
  EXPECT_EQ(head->body, "");
  const auto get = client.read_response();  // the next response starts right after the head
  ASSERT_TRUE(get);
  EXPECT_EQ(get->body, "twelve bytes");
}

TEST(HttpServerTest, EchoesOrMakesRequestIds) {
  std::vector<std::string> seen;
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    seen.emplace_back(exchange.request_id());
    co_await exchange.respond(http::status::ok, "", "text/plain");
  }, [] { auto o = test_options(); o.io_threads = 1; return o; }());
  ASSERT_TRUE(server);
  TestClient client(server->port());
  const std::string long_id(129, 'a');
  const std::string requests[] = {get_request("/", "X-Request-Id: client-id_42\r\n"), get_request("/"),
                                  get_request("/", "X-Request-Id: " + long_id + "\r\n"),
                                  get_request("/", "X-Request-Id: has space\r\n"),
                                  get_request("/", "X-Request-Id: \xc3\xa9t\xc3\xa9\r\n")};
  std::vector<std::string> returned;
  for (const auto& request : requests) {
    ASSERT_TRUE(client.send(request));
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    returned.push_back(response->header("x-request-id"));
  }
  EXPECT_EQ(returned[0], "client-id_42");
  for (std::size_t i = 1; i < returned.size(); ++i) {
    EXPECT_EQ(returned[i].size(), 32u) << returned[i];
    EXPECT_EQ(returned[i].find_first_not_of("0123456789abcdef"), std::string::npos) << returned[i];
  }
  EXPECT_NE(returned[1], returned[2]);
  EXPECT_EQ(seen, returned);
}

TEST(HttpServerTest, SendsExtraHeadersAndDropsUnsafeOnes) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    exchange.add_header("Access-Control-Allow-Origin", "*");
    exchange.add_header("Vary", "Origin");
    exchange.add_header("X-Evil", "a\r\nSet-Cookie: b");
    co_await exchange.respond(http::status::no_content, "ignored for 204", "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 204);
  EXPECT_EQ(response->header("access-control-allow-origin"), "*");
  EXPECT_EQ(response->header("vary"), "Origin");
  EXPECT_EQ(response->header("x-evil"), "");
  EXPECT_EQ(response->header("set-cookie"), "");
  EXPECT_EQ(response->body, "");
}

TEST(HttpServerTest, TurnsHandlerFailuresInto500) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    if (exchange.request().target() == "/throw") throw std::runtime_error("boom");
    co_return;  // "/silent": returns without a reply
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  for (const char* target : {"/throw", "/silent"}) {
    ASSERT_TRUE(client.send(get_request(target)));
    const auto response = client.read_response();
    ASSERT_TRUE(response) << target;
    EXPECT_EQ(response->status, 500);
    EXPECT_EQ(response->body,
              R"({"error":{"message":"The server failed while handling the request.",)"
              R"("type":"server_error","param":null,"code":null}})");
    EXPECT_TRUE(response->keep_alive);  // nothing was half-sent: the connection goes on
  }
}

TEST(HttpServerTest, Serves200ConcurrentConnectionsOnTwoThreads) {
  constexpr int kClients = 200;
  std::atomic<bool> release{false};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    // Every handler waits until the test saw all 200 in flight at once.
    const bool released = co_await wait_until([&] { return release.load(); }, 3s);
    co_await exchange.respond(http::status::ok, released ? "released" : "timed out", "text/plain");
  });
  ASSERT_TRUE(server);
  std::vector<TestClient> clients;
  clients.reserve(kClients);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back(server->port());
    ASSERT_TRUE(clients.back().connected());
    ASSERT_TRUE(clients.back().send(get_request("/client-" + std::to_string(i))));
  }
  EXPECT_TRUE(eventually([&] { return server->active_exchanges() == kClients; }))
      << server->active_exchanges() << " active, " << server->open_connections() << " open";
  EXPECT_EQ(server->open_connections(), static_cast<std::size_t>(kClients));
  release = true;
  for (auto& client : clients) {
    const auto response = client.read_response(4s);
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, "released");
  }
}

TEST(HttpServerTest, Answers503PastMaxConnections) {
  auto options = test_options();
  options.max_connections = 2;
  auto server = start_server(echo, options);
  ASSERT_TRUE(server);
  TestClient first(server->port()), second(server->port());
  ASSERT_TRUE(eventually([&] { return server->open_connections() == 2; }));
  TestClient third(server->port());
  ASSERT_TRUE(third.send(get_request("/")));
  const auto rejected = third.read_response();
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->status, 503);
  EXPECT_EQ(rejected->header("retry-after"), "1");
  EXPECT_NE(rejected->body.find(R"("type":"server_error")"), std::string::npos);
  EXPECT_TRUE(third.wait_closed());
  ASSERT_TRUE(first.send(get_request("/still-served")));
  const auto served = first.read_response();
  ASSERT_TRUE(served);
  EXPECT_EQ(served->body, "GET /still-served");
}

TEST(HttpServerTest, ReportsAPortInUse) {
  auto server = start_server(echo);
  ASSERT_TRUE(server);
  auto options = test_options();
  options.port = server->port();
  const auto second = HttpServer::create(options, echo);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("cannot listen on 127.0.0.1:" + std::to_string(server->port())),
            std::string::npos)
      << second.status().message();
}

TEST(HttpServerTest, RejectsBadOptions) {
  auto options = test_options();
  options.io_threads = 0;
  EXPECT_FALSE(HttpServer::create(options, echo).ok());
  EXPECT_FALSE(HttpServer::create(test_options(), Handler{}).ok());
  options = test_options();
  options.host = "no-such-host.invalid";
  EXPECT_FALSE(HttpServer::create(options, echo).ok());
}

}  // namespace
}  // namespace pagoda::server
