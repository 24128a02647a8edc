// Disconnect detection: while a handler runs, the transport watches the socket, so a
// client that closes or resets is noticed within milliseconds, streaming or not, and
// the handler's later writes fail quietly. A client that is merely slow is not gone.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>

#include "server/http/http_server.h"
#include "server/http_test_client.h"

namespace pagoda::server {
namespace {

using namespace testing;
using Clock = std::chrono::steady_clock;

// What a handler saw, written on an I/O thread and read by the test.
struct Observed {
  std::atomic<int> callbacks{0};
  std::atomic<Clock::rep> callback_at{0};
  std::atomic<bool> handler_done{false};
  std::atomic<int> write_result{-1};  // 1 true, 0 false
  std::atomic<bool> disconnected{false};

  void on_disconnect(Exchange& exchange) {
    exchange.on_disconnect([this] {
      callback_at = Clock::now().time_since_epoch().count();
      ++callbacks;
    });
  }
  std::chrono::milliseconds callback_delay(Clock::time_point since) const {
    const Clock::time_point at{Clock::duration(callback_at.load())};
    return std::chrono::duration_cast<std::chrono::milliseconds>(at - since);
  }
};

// Streams one event, waits for the client to leave, then tries another.
Handler streaming_handler(Observed& seen) {
  return [&seen](Exchange& exchange) -> asio::awaitable<void> {
    seen.on_disconnect(exchange);
    co_await exchange.begin_stream();
    co_await exchange.send_event("first");
    co_await wait_until([&] { return seen.callbacks.load() > 0; });
    seen.write_result = co_await exchange.send_event("after the client left") ? 1 : 0;
    seen.disconnected = exchange.disconnected();
    co_await exchange.end_stream();
    seen.handler_done = true;
  };
}

// Waits (as a non-streaming request waits on the engine) until the client leaves.
Handler waiting_handler(Observed& seen) {
  return [&seen](Exchange& exchange) -> asio::awaitable<void> {
    seen.on_disconnect(exchange);
    co_await wait_until([&] { return seen.callbacks.load() > 0; });
    co_await exchange.respond(http::status::ok, "too late", "text/plain");
    seen.disconnected = exchange.disconnected();
    seen.handler_done = true;
  };
}

TEST(HttpDisconnectTest, AStreamingClientThatClosesIsNoticedAtOnce) {
  Observed seen;
  auto server = start_server(streaming_handler(seen));
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/stream")));
  ASSERT_TRUE(client.read_until("data: first\n\n\r\n"));
  const auto closed_at = Clock::now();
  client.close();
  ASSERT_TRUE(eventually([&] { return seen.handler_done.load(); }));
  EXPECT_EQ(seen.callbacks.load(), 1);
  EXPECT_LT(seen.callback_delay(closed_at), 100ms);
  EXPECT_EQ(seen.write_result.load(), 0);  // send_event returns false: the client is gone
  EXPECT_TRUE(seen.disconnected.load());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0 && server->active_exchanges() == 0; }));
}

TEST(HttpDisconnectTest, AWaitingClientThatClosesIsNoticedAtOnce) {
  Observed seen;
  auto server = start_server(waiting_handler(seen));
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(post_request("/v1/completions", R"({"prompt":"x"})")));
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 1; }));
  const auto closed_at = Clock::now();
  client.close();
  ASSERT_TRUE(eventually([&] { return seen.handler_done.load(); }));
  EXPECT_EQ(seen.callbacks.load(), 1);
  EXPECT_LT(seen.callback_delay(closed_at), 100ms);
  EXPECT_TRUE(seen.disconnected.load());
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

TEST(HttpDisconnectTest, AClientThatResetsIsNoticedAtOnce) {
  Observed seen;
  auto server = start_server(streaming_handler(seen));
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/stream")));
  ASSERT_TRUE(client.read_until("data: first\n\n\r\n"));
  const auto reset_at = Clock::now();
  client.reset();
  ASSERT_TRUE(eventually([&] { return seen.handler_done.load(); }));
  EXPECT_EQ(seen.callbacks.load(), 1);
  EXPECT_LT(seen.callback_delay(reset_at), 100ms);
  EXPECT_EQ(seen.write_result.load(), 0);
}

TEST(HttpDisconnectTest, ASlowClientIsNotDisconnected) {
  Observed seen;
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    seen.on_disconnect(exchange);
    co_await sleep_for(300ms);  // a long generation
    co_await exchange.begin_stream();
    for (int i = 0; i < 3; ++i) co_await exchange.send_event(std::to_string(i));
    co_await exchange.end_stream();
    seen.handler_done = true;
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  std::this_thread::sleep_for(500ms);  // not reading for a while
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
  EXPECT_TRUE(seen.handler_done.load());
  EXPECT_EQ(seen.callbacks.load(), 0);
}

TEST(HttpDisconnectTest, BytesThatArriveDuringAHandlerAreTheNextRequest) {
  Observed seen;
  std::atomic<int> started{0};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    seen.on_disconnect(exchange);
    ++started;
    if (exchange.request().target() == "/slow") co_await sleep_for(150ms);
    co_await exchange.respond(http::status::ok, std::string(exchange.request().target()), "text/plain");
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/slow")));
  ASSERT_TRUE(eventually([&] { return started.load() == 1; }));
  const std::string next = post_request("/next", "payload");
  ASSERT_TRUE(client.send(next.substr(0, 20)));  // the watcher reads these while /slow runs
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(client.send(next.substr(20)));
  for (const char* expected : {"/slow", "/next"}) {
    const auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, expected);
  }
  EXPECT_EQ(seen.callbacks.load(), 0);
}

TEST(HttpDisconnectTest, AHalfClosedClientIsToldGoneButStillGetsTheReply) {
  Observed seen;
  auto server = start_server(waiting_handler(seen));
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 1; }));
  client.shutdown_write();  // e.g. `nc -q`: done sending, still reading
  const auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "too late");
  EXPECT_EQ(seen.callbacks.load(), 1);
  EXPECT_TRUE(client.wait_closed());
}

TEST(HttpDisconnectTest, ACallbackSetAfterTheClientLeftRunsAtOnce) {
  std::atomic<int> calls{0};
  std::atomic<bool> done{false};
  std::atomic<bool> client_closed{false};
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    co_await wait_until([&] { return client_closed.load(); });
    co_await wait_until([&] { return exchange.disconnected(); });
    exchange.on_disconnect([&] { ++calls; });
    EXPECT_EQ(calls.load(), 1);  // inside on_disconnect
    done = true;
  });
  ASSERT_TRUE(server);
  TestClient client(server->port());
  ASSERT_TRUE(client.send(get_request("/")));
  ASSERT_TRUE(eventually([&] { return server->active_exchanges() == 1; }));
  client.close();
  client_closed = true;
  ASSERT_TRUE(eventually([&] { return done.load(); }));
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpDisconnectTest, AClientThatStopsReadingTimesOutTheWrites) {
  auto options = test_options();
  options.write_timeout = 300ms;
  Observed seen;
  auto server = start_server([&](Exchange& exchange) -> asio::awaitable<void> {
    seen.on_disconnect(exchange);
    co_await exchange.begin_stream();
    const std::string big(64 << 10, 'x');
    const auto give_up = Clock::now() + 3s;
    bool sent = true;
    while (sent && Clock::now() < give_up) sent = co_await exchange.send_event(big);
    seen.write_result = sent ? 1 : 0;
    seen.handler_done = true;
  }, options);
  ASSERT_TRUE(server);
  TestClient client(server->port());
  client.set_receive_buffer(4096);
  ASSERT_TRUE(client.send(get_request("/")));  // and never read
  ASSERT_TRUE(eventually([&] { return seen.handler_done.load(); }, 4s));
  EXPECT_EQ(seen.write_result.load(), 0);
  EXPECT_EQ(seen.callbacks.load(), 1);
  EXPECT_TRUE(eventually([&] { return server->open_connections() == 0; }));
}

}  // namespace
}  // namespace pagoda::server
