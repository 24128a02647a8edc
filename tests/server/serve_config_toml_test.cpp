// pagoda serve's TOML file (flat keys and sections, every kind, errors naming file,
// line and key) and --print-config, which writes the settings back as TOML.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/config/serve_config.h"
#include "server/config/serve_config_settings.h"
#include "serve_config_test_util.h"

namespace pagoda::server {
namespace {

using testing::kModel;
using testing::kOtherModel;
using testing::Resolve;
using testing::TempDir;

TEST(ServeConfig, TomlFileForEveryKind) {
  TempDir dir;
  const std::string file = dir.write(
      "serve.toml",
      "# pagoda serve settings\n"
      "model = \"" + kModel + "\"\n"
      "served_model_name = \"story\"\n"
      "api-key = [\"sk-a\", \"sk-b\"]\n"
      "cors_origin = \"*\"\n"
      "max_body_bytes = \"64KiB\"\n"
      "kv_cache_memory = 1048576\n"
      "log_prompts = true\n"
      "prefix-caching = false\n"
      "kv_cache_type = \"f32\"\n"
      "prefix_cache_eviction = \"fifo\"\n"
      "gpu_memory_utilization = 0.5\n"
      "device = \"cuda\"\n"
      "rate_limit_rpm = 30\n");
  const Expected<ServeConfig> config = Resolve{}({"--config", file});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->model_path, kModel);
  EXPECT_EQ(config->model_name, "story");
  EXPECT_EQ(config->api_keys, (std::vector<std::string>{"sk-a", "sk-b"}));
  EXPECT_EQ(config->cors_origins, std::vector<std::string>{"*"});
  EXPECT_EQ(config->max_body_bytes, 64u << 10);
  EXPECT_EQ(config->engine.kv_memory.bytes, std::optional<uint64_t>(1u << 20));
  EXPECT_TRUE(config->log_prompts);
  EXPECT_FALSE(config->engine.enable_prefix_cache);
  EXPECT_EQ(config->engine.kv_type, DType::F32);
  EXPECT_EQ(config->engine.prefix_cache_eviction, kv::EvictionPolicy::kFifo);
  EXPECT_EQ(config->rate_limit_rpm, 30);
  EXPECT_EQ(config->backend.cuda.memory_utilization, 0.5);
  EXPECT_EQ(config->backend.device.to_string(), "cuda:0");
}

// The chat page is on unless a flag, the environment or the file turns it off; a flag
// wins over both.

TEST(ServeConfig, TomlSectionsAsAnOperatorWritesThem) {
  TempDir dir;
  const std::string file = dir.write(
      "serve.toml",
      "[server]\nhost = \"0.0.0.0\"\nport = 9100\napi_keys = [\"k1\", \"k2\"]\ncors_origins = [\"*\"]\n"
      "idle_timeout = 5\n"
      "[model]\npath = \"" + std::string(kModel) + "\"\nserved_name = \"story\"\ncontext_length = 128\n"
      "[engine]\nmax_batched_tokens = 64\nmax_running = 4\nthreads = 1\nmmap = true\n"
      "[cache]\nkv_memory = \"1MiB\"\nkv_type = \"f32\"\nprefix_caching = true\neviction_policy = \"fifo\"\n"
      "block_size = 32\n"
      "[logging]\nlevel = \"warn\"\nformat = \"json\"\n"
      "[limits]\nrate_limit_rpm = 60\nmax_queued = 7\nmax-body-bytes = \"1MiB\"\n"
      "[metrics]\nenabled = true\npath = \"/internal/metrics\"\n"
      "[speculative]\nngram = true\nnum_tokens = 6\nngram_min = 1\nngram_max = 5\np_min = 0.9\n");
  const Expected<ServeConfig> config = Resolve{}({"--config", file});
  ASSERT_TRUE(config.ok()) << config.status().message();
  const ServeConfig& c = *config;
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 9100);
  EXPECT_TRUE(c.backend.cpu.mmap_weights);
  EXPECT_EQ(c.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(c.cors_origins, std::vector<std::string>{"*"});
  EXPECT_EQ(c.idle_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c.model_path, kModel);
  EXPECT_EQ(c.model_name, "story");
  EXPECT_EQ(c.engine.scheduler.max_model_len, 128);
  EXPECT_EQ(c.engine.scheduler.max_batched_tokens, 64);
  EXPECT_EQ(c.engine.scheduler.max_running, 4);
  EXPECT_EQ(c.backend.cpu.n_threads, 1);
  EXPECT_EQ(c.engine.kv_memory.bytes, std::optional<uint64_t>(1u << 20));
  EXPECT_EQ(c.engine.kv_type, DType::F32);
  EXPECT_TRUE(c.engine.enable_prefix_cache);
  EXPECT_EQ(c.engine.prefix_cache_eviction, kv::EvictionPolicy::kFifo);
  EXPECT_EQ(c.engine.block_size, 32);
  EXPECT_EQ(c.log_level, spdlog::level::warn);
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  EXPECT_EQ(c.rate_limit_rpm, 60);
  EXPECT_EQ(c.max_queued, 7);
  EXPECT_EQ(c.max_body_bytes, 1u << 20);
  EXPECT_EQ(c.sources.at("port"), file + ":3: server.port");
  EXPECT_EQ(c.sources.at("max-body-bytes"), file + ":28: limits.max-body-bytes");
  EXPECT_TRUE(c.metrics);
  EXPECT_EQ(c.metrics_path, "/internal/metrics");
  EXPECT_EQ(c.engine.speculative.method, engine::SpeculativeMethod::kNgram);
  EXPECT_EQ(c.engine.speculative.num_speculative_tokens, 6);
  EXPECT_EQ(c.engine.speculative.ngram_min, 1);
  EXPECT_EQ(c.engine.speculative.ngram_max, 5);
  EXPECT_EQ(c.engine.speculative.draft_p_min, 0.9f);
}

TEST(ServeConfig, PrintConfigShowsEveryValueAndItsSource) {
  TempDir dir;
  const std::string file = dir.write("serve.toml", "[cache]\nkv_memory = \"2MiB\"\n");
  Resolve resolve;
  resolve.env = {{"PAGODA_PORT", "9300"}};
  const Expected<ServeConfig> config = resolve(
      {"-m", kModel, "--config", file, "--api-key", "sk-secret", "--no-prefix-caching", "-t", "2",
       "--cors-origin", "http://a", "--cors-origin", "http://b:1"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  const std::string printed = print_serve_config(*config);
  auto line_of = [&](const std::string& start) {
    const size_t at = printed.find("\n" + start);
    EXPECT_NE(at, std::string::npos) << start << " in\n" << printed;
    if (at == std::string::npos) return std::string();
    return printed.substr(at + 1, printed.find('\n', at + 1) - at - 1);
  };
  EXPECT_EQ(line_of("model ="), "model = \"" + std::string(kModel) + "\"  # --model");
  EXPECT_EQ(line_of("port ="), "port = 9300  # PAGODA_PORT");
  EXPECT_EQ(line_of("host ="), "host = \"127.0.0.1\"  # default");
  EXPECT_EQ(line_of("kv-cache-memory ="), "kv-cache-memory = \"2MiB\"  # " + file + ":2: cache.kv_memory");
  EXPECT_EQ(line_of("prefix-caching ="), "prefix-caching = false  # --prefix-caching");
  EXPECT_EQ(line_of("threads ="), "threads = 2  # --threads");
  EXPECT_EQ(line_of("cors-origin ="), "cors-origin = [\"http://a\", \"http://b:1\"]  # --cors-origin");
  EXPECT_EQ(line_of("# api-key"), "# api-key: 1 key(s), not shown  # --api-key");
  EXPECT_EQ(printed.find("sk-secret"), std::string::npos);
  // Every setting has its line.
  for (const SettingSpec& spec : serve_settings()) {
    EXPECT_NE(printed.find(std::string(spec.name)), std::string::npos) << spec.name;
  }
}

TEST(ServeConfig, TomlErrorsNameFileLineAndKey) {
  TempDir dir;
  const Resolve resolve;
  auto error_of = [&](const std::string& text) {
    return resolve.error({"-m", kModel, "--config", dir.write("serve.toml", text)});
  };
  const std::string f = (dir.path() / "serve.toml").string();
  EXPECT_EQ(error_of("host = \"a\"\nport = 70000\n"), f + ":2: port: 70000 is out of range 0..65535");
  EXPECT_EQ(error_of("\n\nport = \"8080\"\n"), f + ":3: port: expected an integer, got a string");
  EXPECT_EQ(error_of("log_prompts = \"yes\"\n"), f + ":1: log_prompts: expected true or false, got a string");
  EXPECT_EQ(error_of("api_key = [\"a\", 2]\n"), f + ":1: api_key: expected an array of strings, got an integer");
  EXPECT_EQ(error_of("kv_cache_memory = 1.5\n"),
            f + ":1: kv_cache_memory: expected an integer or a string such as \"4GiB\", got a float");
  EXPECT_EQ(error_of("gpu_memory_utilization = \"high\"\n"),
            f + ":1: gpu_memory_utilization: expected a number, got a string");
  EXPECT_EQ(error_of("prot = 80\n"), f + ":1: unknown setting 'prot' (see pagoda serve --help)");
  EXPECT_EQ(error_of("[engine]\nblock_size = 8\n"),
            f + ":2: unknown setting 'engine.block_size' (see pagoda serve --help)");
  EXPECT_EQ(error_of("[cache]\nkv_memory = 1\n[server]\nmodel = \"x\"\n"),
            f + ":4: unknown setting 'server.model' (see pagoda serve --help)");
  EXPECT_EQ(error_of("\n[cahce]\nkv_memory = 1\n"),
            f + ":2: unknown section [cahce] (sections: server, model, engine, cache, speculative, logging, metrics, limits)");
  EXPECT_EQ(error_of("[metrics]\npath = \"/health\"\n"),
            f + ":2: metrics.path: '/health' is a path the server already serves");
  // (toml++ orders keys, so "max-queued" is read first.)
  EXPECT_EQ(error_of("max_queued = 1\nmax-queued = 2\n"),
            f + ":1: max_queued: 'max-queued' is set twice (" + f + ":2: max-queued)");
  EXPECT_EQ(error_of("port = 1\n[server]\nport = 2\n"),
            f + ":3: server.port: 'port' is set twice (" + f + ":1: port)");
  const std::string syntax = error_of("port = 80\nhost = \n");
  EXPECT_EQ(syntax.rfind(f + ":2:", 0), 0u) << syntax;
  EXPECT_NE(syntax.find("TOML syntax error"), std::string::npos) << syntax;
}

}  // namespace
}  // namespace pagoda::server
