// Server-sent events: the framing functions, and streams over real sockets whose events
// must reach the client one by one, as they are sent.

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "server/http/http_server.h"
#include "server/http/sse.h"
#include "server/http_test_client.h"

namespace pagoda::server {
namespace {

using namespace testing;

TEST(SseTest, FramesAnEventAsDataLines) {
  EXPECT_EQ(sse_event(R"({"a":1})"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_event("[DONE]"), "data: [DONE]\n\n");
  EXPECT_EQ(sse_event(""), "data: \n\n");
  // Every line break an SSE client recognises starts a new data line.
  EXPECT_EQ(sse_event("a\nb\r\nc\rd"), "data: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(sse_event("end\n"), "data: end\ndata: \n\n");
}

TEST(SseTest, FramesChunks) {
  EXPECT_EQ(http_chunk("hello"), "5\r\nhello\r\n");
  EXPECT_EQ(http_chunk(std::string(255, 'x')), "ff\r\n" + std::string(255, 'x') + "\r\n");
  EXPECT_EQ(http_chunk(std::string(4096, 'y')).substr(0, 6), "1000\r\n");
  EXPECT_EQ(sse_event_chunk("hi"), "a\r\ndata: hi\n\n\r\n");
  EXPECT_EQ(sse_event_chunk("x\ny"), http_chunk(sse_event("x\ny")));
  EXPECT_EQ(kLastHttpChunk, "0\r\n\r\n");
}

TEST(SseTest, EventsArriveOneByOneAsTheyAreSent) {
  // The handler sends event k only after the client has read event k-1: a server that
  // buffered events (no flush, Nagle) would stall this test.
  std::atomic<int> received{0};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    if (exchange.request().target() == "/after") {
      co_await exchange.respond(http::status::ok, "after", "text/plain");
      co_return;
    }
    if (!co_await exchange.begin_stream()) co_return;
    for (int k = 0; k < 5; ++k) {
      if (!co_await wait_until([&] { return received.load() == k; })) co_return;
      if (!co_await exchange.send_event(R"({"k":)" + std::to_string(k) + "}")) co_return;
    }
    co_await exchange.send_event("[DONE]");
    co_await exchange.end_stream();
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(post_request("/v1/chat/completions", "{}", "X-Request-Id: stream-1\r\n")));
  const auto head = client.read_until("\r\n\r\n");
  ASSERT_TRUE(head);
  EXPECT_NE(head->find("HTTP/1.1 200 OK\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("Content-Type: text/event-stream\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("Cache-Control: no-cache\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("Transfer-Encoding: chunked\r\n"), std::string::npos) << *head;
  EXPECT_NE(head->find("X-Request-Id: stream-1\r\n"), std::string::npos) << *head;
  for (int k = 0; k < 5; ++k) {
    const auto chunk = client.read_chunk();
    ASSERT_TRUE(chunk) << k;
    EXPECT_EQ(*chunk, "data: {\"k\":" + std::to_string(k) + "}\n\n");
    received = k + 1;
  }
  EXPECT_EQ(client.read_chunk(), "data: [DONE]\n\n");
  EXPECT_EQ(client.read_chunk(), "");  // the last chunk
  // Keep-alive goes on after the stream.
  ASSERT_TRUE(client.send(get_request("/after")));
  const auto next = client.read_response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->body, "after");
}

TEST(SseTest, AWholeStreamParsesAsAChunkedResponse) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    exchange.add_header("X-Extra", "1");
    co_await exchange.begin_stream();
    co_await exchange.send_event("one");
    co_await exchange.send_event("two\nlines");
    co_await exchange.end_stream();
    EXPECT_EQ(exchange.status_sent(), 200);
    EXPECT_GT(exchange.bytes_sent(), 100u);
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_TRUE(response->chunked);
  EXPECT_TRUE(response->keep_alive);
  EXPECT_EQ(response->header("x-extra"), "1");
  EXPECT_EQ(response->header("x-accel-buffering"), "no");
  EXPECT_EQ(response->body, "data: one\n\ndata: two\ndata: lines\n\n");
}

TEST(SseTest, AStreamOverHttp10EndsByClosing) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    co_await exchange.begin_stream();
    co_await exchange.send_event("old");
    co_await exchange.end_stream();
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  const auto response = client.read_response();  // ends at the close
  ASSERT_TRUE(response);
  EXPECT_FALSE(response->chunked);
  EXPECT_FALSE(response->keep_alive);
  EXPECT_EQ(response->header("connection"), "");  // HTTP/1.0 closes by default
  EXPECT_EQ(response->body, "data: old\n\n");
  EXPECT_TRUE(client.closed());
}

TEST(SseTest, AHandlerThatReturnsMidStreamHasItsStreamEnded) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    co_await exchange.begin_stream();
    co_await exchange.send_event("only");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "data: only\n\n");
}

TEST(SseTest, AHandlerThatThrowsMidStreamHasItsStreamCut) {
  auto server = start_server([](Exchange& exchange) -> asio::awaitable<void> {
    co_await exchange.begin_stream();
    co_await exchange.send_event("partial");
    throw std::runtime_error("engine failure");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  EXPECT_FALSE(client.read_response());  // no last chunk: the body is incomplete
  EXPECT_TRUE(client.closed());
}

TEST(SseTest, ASecondReplyIsRefused) {
  std::atomic<bool> second_stream{true};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    co_await exchange.respond(http::status::ok, "first", "text/plain");
    second_stream = co_await exchange.begin_stream();
    co_await exchange.respond(http::status::ok, "second", "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/") + get_request("/")));
  for (int i = 0; i < 2; ++i) {
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, "first");
  }
  EXPECT_FALSE(second_stream.load());
}

}  // namespace
}  // namespace pagoda::server
