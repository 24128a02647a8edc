#include "fake_openai_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pagoda::loadgen::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Json = nlohmann::json;

int count_words(const std::string& text) {
  std::istringstream words(text);
  int n = 0;
  for (std::string word; words >> word;) ++n;
  return n;
}

std::string chunk(const std::string& bytes) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  return size + bytes + "\r\n";
}

}  // namespace

struct FakeOpenAiServer::Session {
  FakeOpenAiServer& server;
  tcp::socket socket;
  beast::flat_buffer buffer;

  asio::awaitable<void> write(const std::string& bytes) {
    co_await asio::async_write(socket, asio::buffer(bytes), asio::use_awaitable);
  }

  asio::awaitable<void> sleep(std::chrono::milliseconds delay) {
    asio::steady_timer timer(socket.get_executor(), delay);
    co_await timer.async_wait(asio::use_awaitable);
  }

  asio::awaitable<void> respond(int status, const Json& body) {
    http::response<http::string_body> response{static_cast<http::status>(status), 11};
    response.set(http::field::content_type, "application/json");
    response.keep_alive(true);
    response.body() = body.dump();
    response.prepare_payload();
    co_await http::async_write(socket, response, asio::use_awaitable);
  }

  std::string event(const std::string& data) const {
    const std::string eol = server.options_.crlf ? "\r\n" : "\n";
    return "data: " + data + eol + eol;
  }
  std::string event(const Json& payload) const { return event(payload.dump()); }

  Json token_chunk(bool chat, const std::string& text, const Json& finish) const {
    Json choice{{"index", 0}, {"finish_reason", finish}};
    if (chat)
      choice["delta"] = Json{{"content", text}};
    else
      choice["text"] = text;
    return Json{
        {"id", "fake-1"}, {"model", server.options_.model}, {"choices", Json::array({choice})}};
  }

  // The events of a streamed answer, as chunked-encoding chunks. (Built outside the
  // coroutine: GCC 12 rejects string-literal temporaries inside co_await expressions.)
  std::string role_chunk() const {
    Json role = token_chunk(true, "", nullptr);
    role["choices"][0]["delta"] = Json{{"role", "assistant"}, {"content", ""}};
    return chunk(event(role));
  }
  std::string text_chunk(bool chat) const {
    return chunk(event(token_chunk(chat, " tok", nullptr)));
  }
  std::string finish_chunk(bool chat) const {
    return chunk(event(token_chunk(chat, "", "length")));
  }
  std::string usage_chunk(int prompt_tokens, int tokens) const {
    const Json counts{{"prompt_tokens", prompt_tokens},
                      {"completion_tokens", tokens},
                      {"total_tokens", prompt_tokens + tokens}};
    return chunk(event(Json{{"choices", Json::array()}, {"usage", counts}}));
  }
  std::string done_chunks() const { return chunk(event(std::string("[DONE]"))) + "0\r\n\r\n"; }
  static std::string stream_head() {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
           "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
  }
  static std::string comment_chunk() { return chunk(": keep-alive\n\n"); }

  void count_stream_start() {
    const int streams = ++server.streams_;
    for (int peak = server.peak_streams_.load(); streams > peak;)
      server.peak_streams_.compare_exchange_weak(peak, streams);
  }

  // The streamed answer: (a role delta,) a comment, `tokens` text chunks, a finish
  // chunk, a usage chunk when asked, [DONE].
  asio::awaitable<void> stream(bool chat, int tokens, int prompt_tokens, bool usage) {
    const FakeServerOptions& o = server.options_;
    co_await write(stream_head());
    count_stream_start();
    if (chat) co_await write(role_chunk());
    co_await write(comment_chunk());
    for (int i = 0; i < tokens; ++i) {
      co_await sleep(i == 0 ? o.first_token_delay : o.token_delay);
      co_await write(text_chunk(chat));
    }
    co_await write(finish_chunk(chat));
    if (usage && o.send_usage) co_await write(usage_chunk(prompt_tokens, tokens));
    co_await write(done_chunks());
    --server.streams_;
  }

  struct Reply {
    int status = 200;
    Json body;
    bool generated = false;  // a whole completion: sent after the first-token delay
    bool stream = false;     // stream instead: the fields below
    bool chat = false, usage = false;
    int tokens = 0, prompt_tokens = 0;
  };

  static Reply error_reply(int status, const std::string& message, const std::string& type) {
    return Reply{status, Json{{"error", {{"message", message}, {"type", type}}}}};
  }

  static Reply whole_reply(bool chat, int tokens, int prompt_tokens) {
    std::string text;
    for (int i = 0; i < tokens; ++i) text += " tok";
    Json choice{{"index", 0}, {"finish_reason", "length"}};
    if (chat)
      choice["message"] = Json{{"role", "assistant"}, {"content", text}};
    else
      choice["text"] = text;
    Reply reply{200,
                Json{{"choices", Json::array({choice})},
                     {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", tokens}}}}};
    reply.generated = true;
    return reply;
  }

  Reply completion_reply(const http::request<http::string_body>& request, bool chat) {
    const FakeServerOptions& o = server.options_;
    const int n = ++server.completions_;
    {
      std::lock_guard lock(server.mutex_);
      server.bodies_.push_back(request.body());
    }
    if (!o.api_key.empty() && request[http::field::authorization] != "Bearer " + o.api_key)
      return error_reply(401, "invalid api key", "authentication_error");
    if (o.fail_every > 0 && n % o.fail_every == 0)
      return error_reply(503, "server overloaded", "server_error");
    const Json body = Json::parse(request.body());
    const std::string prompt = chat ? body["messages"][0]["content"].get<std::string>()
                                    : body["prompt"].get<std::string>();
    const int tokens = body.value("max_tokens", 16);
    if (!body.value("stream", false)) return whole_reply(chat, tokens, count_words(prompt));
    Reply reply;
    reply.stream = true;
    reply.chat = chat;
    reply.tokens = tokens;
    reply.prompt_tokens = count_words(prompt);
    reply.usage =
        body.contains("stream_options") && body["stream_options"].value("include_usage", false);
    return reply;
  }

  // The word count of the text in the field the server takes; a 400 for a body the
  // server it stands for refuses.
  Reply tokenize_reply(const http::request<http::string_body>& request) {
    ++server.tokenizes_;
    const Json body = Json::parse(request.body(), nullptr, false);
    const std::string& field = server.options_.tokenize_field;
    const bool both = body.is_object() && body.contains("prompt") && body.contains("content");
    if (!body.is_object() || !body.contains(field) || !body[field].is_string() || (field == "prompt" && both)) {
      return error_reply(400, "Give the text in '" + field + "' alone.", "invalid_request_error");
    }
    const int n = count_words(body[field].get<std::string>());
    return Reply{200, Json{{"tokens", std::vector<int>(static_cast<size_t>(n), 7)}, {"count", n}}};
  }

  Reply reply_to(const http::request<http::string_body>& request) {
    const std::string target(request.target());
    if (target == "/v1/models")
      return Reply{
          200, Json{{"object", "list"},
                    {"data", Json::array({{{"id", server.options_.model}, {"object", "model"}}})}}};
    if (target == "/tokenize" && server.options_.has_tokenize) return tokenize_reply(request);
    if (target == "/v1/completions" || target == "/v1/chat/completions")
      return completion_reply(request, target == "/v1/chat/completions");
    return error_reply(404, "no route " + target, "not_found_error");
  }

  asio::awaitable<void> route(const http::request<http::string_body>& request) {
    const Reply reply = reply_to(request);
    if (reply.stream) {
      co_await stream(reply.chat, reply.tokens, reply.prompt_tokens, reply.usage);
      co_return;
    }
    if (reply.generated) co_await sleep(server.options_.first_token_delay);
    co_await respond(reply.status, reply.body);
  }

  asio::awaitable<void> run() {
    try {
      for (;;) {
        http::request<http::string_body> request;
        co_await http::async_read(socket, buffer, request, asio::use_awaitable);
        co_await route(request);
        if (server.options_.drop_after_response || !request.keep_alive()) break;
      }
    } catch (const std::exception&) {
      // The client went away, or the server is stopping.
    }
    beast::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
};

namespace {

asio::awaitable<void> run_session(std::shared_ptr<FakeOpenAiServer::Session> session) {
  co_await session->run();
}

}  // namespace

FakeOpenAiServer::FakeOpenAiServer(FakeServerOptions options)
    : options_(std::move(options)), acceptor_(io_) {
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  auto accept_loop = [this]() -> asio::awaitable<void> {
    try {
      for (;;) {
        tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
        socket.set_option(tcp::no_delay(true));
        ++connections_;
        auto session = std::make_shared<Session>(Session{*this, std::move(socket), {}});
        asio::co_spawn(io_, run_session(std::move(session)), asio::detached);
      }
    } catch (const std::exception&) {
      // The acceptor was closed.
    }
  };
  asio::co_spawn(io_, accept_loop, asio::detached);
  thread_ = std::thread([this] { io_.run(); });
}

FakeOpenAiServer::~FakeOpenAiServer() {
  io_.stop();
  thread_.join();
}

std::vector<std::string> FakeOpenAiServer::completion_bodies() const {
  std::lock_guard lock(mutex_);
  return bodies_;
}

}  // namespace pagoda::loadgen::testing
