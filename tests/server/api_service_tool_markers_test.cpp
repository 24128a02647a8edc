// Tool calls whose marker is a control token, as real vocabularies hold Mistral's
// [TOOL_CALLS] and Llama 3's <|python_tag|>: the grammar lets the model write the token,
// the lazy grammar starts at it, the output shows it to the call parser, and the answer
// is a tool call, whole and streamed. Outside a constrained request the token stays
// hidden. Over a real engine (a random model whose built-in vocabulary ends with those
// control tokens) behind the real HTTP server.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/engine.h"
#include "model/model.h"
#include "server/api_service_server.h"
#include "server/http_test_client.h"
#include "server/service/api_service.h"
#include "server/tools/tool_test_util.h"
#include "test_files.h"
#include "tools/random_model.h"

namespace pagoda::server {
namespace {

using namespace std::chrono_literals;
using testing::TestClient;
using testing::TestResponse;

constexpr int32_t kMaxModelLen = 512;

// A Llama 3.1-style template: reads the tools, names its tag.
constexpr const char* kLlama31Template =
    "{{- bos_token }}{% if tools %}Tools: {{ tools | tojson }}\n{% endif %}"
    "{%- for message in messages %}{{ message.role }}: {{ message.content }}\n{% endfor %}"
    "{%- if false %}<|python_tag|>{% endif %}assistant:";

class ToolMarkersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    file_ = new pagoda::testing::TempFile("tool_markers.gguf");
    pagoda::tools::RandomModelSpec spec;
    spec.n_embd = 64;
    spec.n_layer = 2;
    spec.n_head = 4;
    spec.n_ff = 128;
    spec.n_vocab = 400;
    spec.n_threads = 1;
    spec.control_tokens = {"[TOOL_CALLS]", "<|python_tag|>"};
    const Status written = pagoda::tools::write_random_model(spec, nullptr, file_->path());
    ASSERT_TRUE(written.ok()) << written.message();
    reader_ = new gguf::Reader(pagoda::testing::open_gguf_or_fail(file_->path()));
    backend::CpuBackendOptions backend_options;
    backend_options.n_threads = 1;
    backend_ = backend::make_cpu_backend(backend_options).release();
    engine::EngineConfig config;
    config.scheduler.max_model_len = kMaxModelLen;
    config.scheduler.max_running = 2;
    auto model = model::load_model(*reader_, *backend_, config.load_options());
    ASSERT_TRUE(model.ok()) << model.status().message();
    model_ = model->release();
    auto tokenizer = tokenizer::Tokenizer::from_gguf(*reader_);
    ASSERT_TRUE(tokenizer.ok());
    tokenizer_ = new tokenizer::Tokenizer(std::move(*tokenizer));
    auto engine = engine::Engine::create(*model_, *backend_, *tokenizer_, config);
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    engine_ = engine->release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    delete tokenizer_;
    delete model_;
    delete backend_;
    delete reader_;
    delete file_;
  }

  void serve(const std::string& template_source) {
    testing::start_api_service(*engine_, *tokenizer_,
                               ModelInfo{.name = "markers", .created = 1, .max_model_len = kMaxModelLen},
                               template_source, ApiServiceOptions{}, metrics_, service_, server_);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  TestResponse post(const nlohmann::json& body) {
    TestClient client(server_->port());
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.send(testing::post_request("/v1/chat/completions", body.dump())));
    return client.read_response(30s).value_or(TestResponse{});
  }

  // A greedy chat request that may call get_weather, its first token pushed to `marker`.
  static nlohmann::json weather_request(const std::string& marker) {
    const nlohmann::json tool = {
        {"type", "function"},
        {"function",
         {{"name", "get_weather"},
          {"parameters",
           {{"type", "object"},
            {"properties", {{"city", {{"enum", {"Oslo", "Lima"}}}}}},
            {"required", {"city"}},
            {"additionalProperties", false}}}}}};
    const tokenizer::TokenId id = tokenizer_->find_token(marker);
    EXPECT_NE(id, tokenizer::kNoToken) << marker;
    return {{"messages", {{{"role", "user"}, {"content", "Weather in Oslo?"}}}},
            {"tools", nlohmann::json::array({tool})},
            {"parallel_tool_calls", false},
            {"temperature", 0},
            {"max_tokens", 120},
            {"logit_bias", {{std::to_string(id), 100}}}};
  }

  // The answer is one call of get_weather with valid arguments, and no marker text.
  static void expect_weather_call(const TestResponse& response) {
    ASSERT_EQ(response.status, 200) << response.body;
    const nlohmann::json choice = nlohmann::json::parse(response.body)["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << response.body;
    const nlohmann::json& message = choice["message"];
    ASSERT_TRUE(message.contains("tool_calls")) << response.body;
    ASSERT_EQ(message["tool_calls"].size(), 1u) << response.body;
    const nlohmann::json& call = message["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    const nlohmann::json arguments =
        nlohmann::json::parse(call["function"]["arguments"].get<std::string>());
    ASSERT_TRUE(arguments.contains("city")) << arguments.dump();
    EXPECT_TRUE(arguments["city"] == "Oslo" || arguments["city"] == "Lima") << arguments.dump();
    EXPECT_TRUE(message["content"].is_null() || message["content"] == "") << response.body;
  }

  // Every streamed delta's content joined, and the streamed calls' names and arguments.
  struct Streamed {
    std::string content;
    std::string names;
    std::string arguments;
    std::string finish_reason;
  };
  Streamed stream(nlohmann::json body) {
    body["stream"] = true;
    const TestResponse response = post(body);
    EXPECT_EQ(response.status, 200) << response.body;
    Streamed streamed;
    for (const std::string& payload : testing::sse_payloads(response.body)) {
      if (payload == "[DONE]") break;
      const nlohmann::json choice = nlohmann::json::parse(payload)["choices"][0];
      const nlohmann::json& delta = choice["delta"];
      if (delta.contains("content") && delta["content"].is_string())
        streamed.content += delta["content"].get<std::string>();
      for (const nlohmann::json& call : delta.value("tool_calls", nlohmann::json::array())) {
        const nlohmann::json function = call.value("function", nlohmann::json::object());
        streamed.names += function.value("name", "");
        streamed.arguments += function.value("arguments", "");
      }
      if (choice["finish_reason"].is_string()) streamed.finish_reason = choice["finish_reason"];
    }
    return streamed;
  }

  static pagoda::testing::TempFile* file_;
  static gguf::Reader* reader_;
  static backend::Backend* backend_;
  static model::Model* model_;
  static tokenizer::Tokenizer* tokenizer_;
  static engine::Engine* engine_;
  ServerMetrics metrics_;
  std::unique_ptr<ApiService> service_;
  std::unique_ptr<HttpServer> server_;
};

pagoda::testing::TempFile* ToolMarkersTest::file_ = nullptr;
gguf::Reader* ToolMarkersTest::reader_ = nullptr;
backend::Backend* ToolMarkersTest::backend_ = nullptr;
model::Model* ToolMarkersTest::model_ = nullptr;
tokenizer::Tokenizer* ToolMarkersTest::tokenizer_ = nullptr;
engine::Engine* ToolMarkersTest::engine_ = nullptr;

TEST_F(ToolMarkersTest, MistralCallStartsAtTheControlToken) {
  ASSERT_TRUE(tokenizer_->is_control(tokenizer_->find_token("[TOOL_CALLS]")));
  serve(tools::testing::kMistralTemplate);
  expect_weather_call(post(weather_request("[TOOL_CALLS]")));

  const Streamed streamed = stream(weather_request("[TOOL_CALLS]"));
  EXPECT_EQ(streamed.finish_reason, "tool_calls");
  EXPECT_EQ(streamed.names, "get_weather");
  EXPECT_TRUE(nlohmann::json::parse(streamed.arguments).contains("city")) << streamed.arguments;
  EXPECT_EQ(streamed.content.find("[TOOL_CALLS]"), std::string::npos) << streamed.content;
}

TEST_F(ToolMarkersTest, Llama3CallStartsAtThePythonTag) {
  serve(kLlama31Template);
  expect_weather_call(post(weather_request("<|python_tag|>")));
}

TEST_F(ToolMarkersTest, WithoutToolsTheControlTokenStaysHidden) {
  serve(tools::testing::kMistralTemplate);
  nlohmann::json body = weather_request("[TOOL_CALLS]");
  body.erase("tools");
  body.erase("parallel_tool_calls");
  body["max_tokens"] = 3;
  const TestResponse response = post(body);
  ASSERT_EQ(response.status, 200) << response.body;
  const nlohmann::json choice = nlohmann::json::parse(response.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "length");
  // Three tokens of the marker, all hidden.
  EXPECT_EQ(choice["message"]["content"], "") << response.body;
}

}  // namespace
}  // namespace pagoda::server
