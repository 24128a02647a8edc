#include "server/config/serve_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "server/config/serve_config_settings.h"
#include "serve_config_test_util.h"

namespace pagoda::server {
namespace {

using testing::kModel;
using testing::kOtherModel;
using testing::Resolve;
using testing::TempDir;

TEST(ServeConfig, Defaults) {
  const Expected<ServeConfig> config = Resolve{}({"-m", kModel});
  ASSERT_TRUE(config.ok()) << config.status().message();
  const ServeConfig& c = *config;
  EXPECT_EQ(c.model_path, kModel);
  EXPECT_EQ(c.model_name, "stories260K");
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 8080);
  EXPECT_EQ(c.backend.cpu.n_threads, physical_core_count());
  EXPECT_EQ(c.io_threads, 2);
  EXPECT_TRUE(c.api_keys.empty());
  EXPECT_TRUE(c.api_key_file.empty());
  EXPECT_TRUE(c.cors_origins.empty());
  EXPECT_EQ(c.rate_limit_rpm, 0);
  EXPECT_EQ(c.max_queued, 256);
  EXPECT_EQ(c.max_body_bytes, 8u << 20);
  EXPECT_EQ(c.idle_timeout, std::chrono::seconds(60));
  EXPECT_EQ(c.read_timeout, std::chrono::seconds(30));
  EXPECT_EQ(c.max_connections, 10000u);
  EXPECT_TRUE(c.webui);
  EXPECT_EQ(c.shutdown_grace, std::chrono::seconds(30));
  EXPECT_EQ(c.log_format, LogFormat::kText);
  EXPECT_EQ(c.log_level, spdlog::level::info);
  EXPECT_FALSE(c.log_prompts);
  EXPECT_TRUE(c.chat_template_file.empty());
  EXPECT_EQ(c.backend.cpu.numerics, backend::CpuNumerics::kFast);
  EXPECT_FALSE(c.backend.cpu.mmap_weights);
  EXPECT_EQ(c.backend.device.kind, backend::DeviceKind::kAuto);
  EXPECT_EQ(c.backend.cuda.memory_utilization, 0.9);
  EXPECT_FALSE(c.backend.cuda.batch_invariant);
  const engine::EngineConfig defaults;
  EXPECT_EQ(c.engine.scheduler.max_batched_tokens, defaults.scheduler.max_batched_tokens);
  EXPECT_EQ(c.engine.scheduler.max_running, defaults.scheduler.max_running);
  EXPECT_EQ(c.engine.scheduler.max_model_len, 0);
  EXPECT_EQ(c.engine.block_size, 16);
  EXPECT_EQ(c.engine.kv_type, DType::F16);
  EXPECT_FALSE(c.engine.kv_memory.bytes.has_value());
  EXPECT_TRUE(c.engine.enable_prefix_cache);
  EXPECT_EQ(c.engine.prefix_cache_eviction, kv::EvictionPolicy::kLru);
  EXPECT_TRUE(c.config_file.empty());
  EXPECT_EQ(c.sources.at("model"), "--model");
  EXPECT_EQ(c.sources.at("port"), "default");
  EXPECT_EQ(c.sources.size(), serve_settings().size());
}

TEST(ServeConfig, EveryFlag) {
  TempDir dir;
  const std::string keys = dir.write("keys.txt", "sk-file\n");
  const std::string tmpl = dir.write("chat.jinja", "{{ messages }}");
  const Expected<ServeConfig> config = Resolve{}(
      {"--model", kModel, "--served-model-name", "tiny", "--chat-template", tmpl, "--numerics",
       "reference", "--mmap", "-t", "3", "--device", "cuda:1", "--gpu-memory-utilization", "0.75", "--batch-invariant", "--host", "0.0.0.0", "--port", "9001", "--io-threads", "4",
       "--max-body-bytes", "16MiB", "--idle-timeout", "5", "--read-timeout", "7",
       "--max-connections", "50", "--no-webui", "--api-key", "sk-a", "--api-key", "sk-b", "--api-key-file", keys,
       "--cors-origin", "*", "--rate-limit-rpm", "120", "--max-queued", "9", "--shutdown-grace",
       "0", "--log-format", "json", "--log-level", "debug", "--log-prompts", "--max-model-len",
       "256", "--max-batched-tokens", "128", "--max-running", "8", "--block-size", "32",
       "--kv-cache-type", "q8_0", "--kv-cache-memory", "512MiB", "--no-prefix-caching",
       "--prefix-cache-eviction", "lfu", "--max-priority-boost", "4", "--no-metrics",
       "--metrics-path", "/prom", "--no-speculative-ngram", "--speculative-model", kModel,
       "--num-speculative-tokens", "5", "--speculative-ngram-min", "3", "--speculative-ngram-max", "6",
       "--no-speculative-adaptive", "--speculative-p-min", "0.5"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  const ServeConfig& c = *config;
  EXPECT_EQ(c.model_name, "tiny");
  EXPECT_EQ(c.engine.speculative.method, engine::SpeculativeMethod::kDraft);
  EXPECT_EQ(c.engine.speculative.draft_model_path, kModel);
  EXPECT_EQ(c.engine.speculative.num_speculative_tokens, 5);
  EXPECT_EQ(c.engine.speculative.ngram_min, 3);
  EXPECT_EQ(c.engine.speculative.ngram_max, 6);
  EXPECT_FALSE(c.engine.speculative.adaptive);
  EXPECT_EQ(c.engine.speculative.draft_p_min, 0.5f);
  EXPECT_EQ(c.chat_template_file, tmpl);
  EXPECT_EQ(c.backend.cpu.numerics, backend::CpuNumerics::kReference);
  EXPECT_TRUE(c.backend.cpu.mmap_weights);
  EXPECT_EQ(c.backend.cpu.n_threads, 3);
  EXPECT_EQ(c.backend.device.kind, backend::DeviceKind::kCuda);
  EXPECT_EQ(c.backend.device.index, 1);
  EXPECT_EQ(c.backend.cuda.memory_utilization, 0.75);
  EXPECT_TRUE(c.backend.cuda.batch_invariant);
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 9001);
  EXPECT_EQ(c.io_threads, 4);
  EXPECT_EQ(c.max_body_bytes, 16u << 20);
  EXPECT_EQ(c.idle_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c.read_timeout, std::chrono::seconds(7));
  EXPECT_EQ(c.max_connections, 50u);
  EXPECT_FALSE(c.webui);
  EXPECT_EQ(c.api_keys, (std::vector<std::string>{"sk-a", "sk-b"}));
  EXPECT_EQ(c.api_key_file, keys);
  EXPECT_EQ(c.cors_origins, std::vector<std::string>{"*"});
  EXPECT_EQ(c.rate_limit_rpm, 120);
  EXPECT_EQ(c.max_queued, 9);
  EXPECT_EQ(c.shutdown_grace, std::chrono::seconds(0));
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  EXPECT_EQ(c.log_level, spdlog::level::debug);
  EXPECT_TRUE(c.log_prompts);
  EXPECT_EQ(c.logging().format, LogFormat::kJson);
  EXPECT_EQ(c.engine.scheduler.max_model_len, 256);
  EXPECT_EQ(c.engine.scheduler.max_batched_tokens, 128);
  EXPECT_EQ(c.engine.scheduler.max_running, 8);
  EXPECT_EQ(c.engine.block_size, 32);
  EXPECT_EQ(c.engine.kv_type, DType::Q8_0);
  EXPECT_EQ(c.engine.kv_memory.bytes, std::optional<uint64_t>(512u << 20));
  EXPECT_FALSE(c.engine.enable_prefix_cache);
  EXPECT_EQ(c.engine.prefix_cache_eviction, kv::EvictionPolicy::kLfu);
  EXPECT_EQ(c.max_priority_boost, 4);
  EXPECT_FALSE(c.metrics);
  EXPECT_EQ(c.metrics_path, "/prom");
  for (const auto& [name, source] : c.sources) {
    EXPECT_EQ(source, "--" + name) << "every setting came from its flag";
  }
}

TEST(ServeConfig, SpeculationTakesOneMethodAndChecksItsValues) {
  const Expected<ServeConfig> ngram = Resolve{}({"--model", kModel, "--speculative-ngram"});
  ASSERT_TRUE(ngram.ok()) << ngram.status().message();
  EXPECT_EQ(ngram->engine.speculative.method, engine::SpeculativeMethod::kNgram);
  EXPECT_EQ(ngram->engine.speculative.max_draft_tokens(), 3);
  const Expected<ServeConfig> none = Resolve{}({"--model", kModel});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->engine.speculative.method, engine::SpeculativeMethod::kNone);
  EXPECT_EQ(none->engine.speculative.max_draft_tokens(), 0);

  const Expected<ServeConfig> both =
      Resolve{}({"--model", kModel, "--speculative-ngram", "--speculative-model", kModel});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("choose one way to speculate"), std::string::npos)
      << both.status().message();
  const Expected<ServeConfig> missing =
      Resolve{}({"--model", kModel, "--speculative-model", "/nonexistent/draft.gguf"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no such file: /nonexistent/draft.gguf"), std::string::npos)
      << missing.status().message();
  EXPECT_FALSE(Resolve{}({"--model", kModel, "--num-speculative-tokens", "17"}).ok());
  EXPECT_FALSE(Resolve{}({"--model", kModel, "--speculative-ngram-min", "0"}).ok());
  EXPECT_EQ(none->engine.speculative.draft_p_min, 0.0f);
  const Expected<ServeConfig> too_sure = Resolve{}({"--model", kModel, "--speculative-p-min", "1.5"});
  ASSERT_FALSE(too_sure.ok());
  EXPECT_NE(too_sure.status().message().find("must be in [0, 1], got 1.5"), std::string::npos)
      << too_sure.status().message();
  EXPECT_FALSE(Resolve{}({"--model", kModel, "--speculative-p-min", "nan"}).ok());
}

TEST(ServeConfig, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  TempDir dir;
  const std::string file = dir.write("serve.toml",
                                     "port = 7000\n"
                                     "host = \"10.0.0.1\"\n"
                                     "io_threads = 3\n"
                                     "max-queued = 11\n");
  Resolve resolve;
  resolve.env = {{"PAGODA_CONFIG", file}, {"PAGODA_PORT", "7100"}, {"PAGODA_HOST", " 10.0.0.2 "}};
  const Expected<ServeConfig> config = resolve({"-m", kModel, "--port", "7200"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->port, 7200);           // flag over env and file
  EXPECT_EQ(config->host, "10.0.0.2");     // env (trimmed) over file
  EXPECT_EQ(config->io_threads, 3);        // file over default
  EXPECT_EQ(config->max_queued, 11);       // '-' and '_' both name a setting
  EXPECT_EQ(config->max_connections, 10000u);  // default
  EXPECT_EQ(config->config_file, file);
  EXPECT_EQ(config->sources.at("port"), "--port");
  EXPECT_EQ(config->sources.at("host"), "PAGODA_HOST");
  EXPECT_EQ(config->sources.at("io-threads"), file + ":3: io_threads");
  EXPECT_EQ(config->sources.at("max-connections"), "default");
}

TEST(ServeConfig, ConfigFlagBeatsConfigEnvironment) {
  TempDir dir;
  const std::string flag_file = dir.write("a.toml", "port = 1111\n");
  const std::string env_file = dir.write("b.toml", "port = 2222\n");
  Resolve resolve;
  resolve.env = {{"PAGODA_CONFIG", env_file}};
  const Expected<ServeConfig> config = resolve({"-m", kModel, "--config", flag_file});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->port, 1111);
  EXPECT_EQ(config->config_file, flag_file);
}

TEST(ServeConfig, EnvironmentForEveryKind) {
  Resolve resolve;
  resolve.env = {{"PAGODA_MODEL", kModel},
                 {"PAGODA_API_KEY", "sk-one, sk-two,,"},
                 {"PAGODA_CORS_ORIGIN", "http://localhost:3000,https://app.example"},
                 {"PAGODA_KV_CACHE_MEMORY", "1.5GiB"},
                 {"PAGODA_LOG_PROMPTS", "yes"},
                 {"PAGODA_PREFIX_CACHING", "off"},
                 {"PAGODA_LOG_FORMAT", "json"},
                 {"PAGODA_THREADS", "2"},
                 {"PAGODA_DEVICE", "CPU"},
                 {"PAGODA_PORT", ""}};  // blank: as if unset
  const Expected<ServeConfig> config = resolve({});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->model_path, kModel);
  EXPECT_EQ(config->api_keys, (std::vector<std::string>{"sk-one", "sk-two"}));
  EXPECT_EQ(config->cors_origins,
            (std::vector<std::string>{"http://localhost:3000", "https://app.example"}));
  EXPECT_EQ(config->engine.kv_memory.bytes, std::optional<uint64_t>(3u << 29));
  EXPECT_TRUE(config->log_prompts);
  EXPECT_FALSE(config->engine.enable_prefix_cache);
  EXPECT_EQ(config->log_format, LogFormat::kJson);
  EXPECT_EQ(config->backend.cpu.n_threads, 2);
  EXPECT_EQ(config->backend.device.kind, backend::DeviceKind::kCpu);
  EXPECT_EQ(config->port, 8080);
  EXPECT_EQ(config->sources.at("api-key"), "PAGODA_API_KEY");
}

TEST(ServeConfig, WebUiFromFlagEnvironmentAndToml) {
  TempDir dir;
  const std::string off_file = dir.write("off.toml", "webui = false\n");
  const std::string on_file = dir.write("on.toml", "webui = true\n");
  Resolve resolve;
  Expected<ServeConfig> config = resolve({"-m", kModel, "--no-webui"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->webui);
  EXPECT_EQ(config->sources.at("webui"), "--webui");
  config = resolve({"-m", kModel, "--config", off_file});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->webui);
  config = resolve({"-m", kModel, "--config", off_file, "--webui"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(config->webui);
  resolve.env = {{"PAGODA_WEBUI", "off"}};
  config = resolve({"-m", kModel});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->webui);
  EXPECT_EQ(config->sources.at("webui"), "PAGODA_WEBUI");
  config = resolve({"-m", kModel, "--config", on_file});  // the environment beats the file
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->webui);
  resolve.env = {{"PAGODA_WEBUI", "maybe"}};
  EXPECT_FALSE(resolve({"-m", kModel}).ok());
}

TEST(ServeConfig, ListsAndBooleansOverride) {
  TempDir dir;
  const std::string file = dir.write("serve.toml", "api_key = [\"sk-file\"]\nlog_prompts = true\n");
  Resolve resolve;
  resolve.env = {{"PAGODA_API_KEY", "sk-env"}};
  // The environment's list replaces the file's (lists do not merge across sources).
  Expected<ServeConfig> config = resolve({"-m", kModel, "--config", file});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->api_keys, std::vector<std::string>{"sk-env"});
  EXPECT_TRUE(config->log_prompts);
  // A negated flag beats the file; the last of repeated scalar flags wins.
  config = resolve({"-m", kModel, "--config", file, "--no-log-prompts", "--port", "1", "--port", "2"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->log_prompts);
  EXPECT_EQ(config->port, 2);
  config = resolve({"-m", kModel, "--log-prompts=false", "--prefix-caching"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->log_prompts);
  EXPECT_TRUE(config->engine.enable_prefix_cache);
}

TEST(ServeConfig, FlagErrorsNameTheFlag) {
  const Resolve resolve;
  const std::string m = kModel;
  EXPECT_EQ(resolve.error({"-m", m, "--port", "70000"}), "--port: 70000 is out of range 0..65535");
  EXPECT_EQ(resolve.error({"-m", m, "--port", "80a"}), "--port: '80a' is not an integer");
  EXPECT_EQ(resolve.error({"-m", m, "--port", "-1"}), "--port: -1 is out of range 0..65535");
  EXPECT_EQ(resolve.error({"-m", m, "--io-threads", "0"}), "--io-threads: 0 is out of range 1..256");
  EXPECT_EQ(resolve.error({"-m", m, "--log-format", "xml"}),
            "--log-format: unknown log format 'xml' (use text or json)");
  EXPECT_EQ(resolve.error({"-m", m, "--log-level", "loud"}),
            "--log-level: unknown log level 'loud' (use trace, debug, info, warn, error, critical or off)");
  EXPECT_EQ(resolve.error({"-m", m, "--numerics", "exact"}),
            "--numerics: 'exact' is not a numerics mode: use fast or reference");
  EXPECT_EQ(resolve.error({"-m", m, "--device", "gpu"}),
            "--device: 'gpu' is not a device: use auto, cpu, cuda or cuda:N");
  EXPECT_EQ(resolve.error({"-m", m, "--device", "cuda:x"}),
            "--device: 'cuda:x' is not a device: use auto, cpu, cuda or cuda:N");
  EXPECT_EQ(resolve.error({"-m", m, "--gpu-memory-utilization", "1.5"}),
            "--gpu-memory-utilization: 1.500000 is not a share of memory in (0, 1]");
  EXPECT_EQ(resolve.error({"-m", m, "--gpu-memory-utilization", "most"}),
            "--gpu-memory-utilization: 'most' is not a number");
  EXPECT_EQ(resolve.error({"-m", m, "--kv-cache-type", "q4_0"}),
            "--kv-cache-type: unknown kv cache type 'q4_0' (use f16, f32 or q8_0)");
  EXPECT_EQ(resolve.error({"-m", m, "--prefix-cache-eviction", "mru"}),
            "--prefix-cache-eviction: unknown prefix-cache eviction policy 'mru' (expected lru, "
            "lfu or fifo)");
  EXPECT_EQ(resolve.error({"-m", m, "--kv-cache-memory", "4XB"}),
            "--kv-cache-memory: '4XB' is not a size in bytes (e.g. 8388608, 512MiB, 4GiB)");
  EXPECT_EQ(resolve.error({"-m", m, "--max-body-bytes", "10"}),
            "--max-body-bytes: 10 is out of range 1KiB..4GiB");
  EXPECT_EQ(resolve.error({"-m", m, "--max-model-len", "1"}),
            "--max-model-len: must be 0 (the model's context) or at least 2 tokens");
  EXPECT_EQ(resolve.error({"-m", m, "--log-prompts=maybe"}),
            "--log-prompts: 'maybe' is not a boolean (true or false)");
  EXPECT_EQ(resolve.error({"-m", m, "--host", ""}), "--host: empty value");
  EXPECT_EQ(resolve.error({"-m", "/nonexistent/model.gguf"}),
            "--model: no such file: /nonexistent/model.gguf");
  EXPECT_EQ(resolve.error({"-m", m, "--chat-template", "/nonexistent/t.jinja"}),
            "--chat-template: no such file: /nonexistent/t.jinja");
  EXPECT_EQ(resolve.error({"-m", m, "--api-key", "has space"}),
            "--api-key: api key 1 contains a space, control or non-ASCII character");
  EXPECT_EQ(resolve.error({"-m", m, "--cors-origin", "localhost:3000"}),
            "--cors-origin: cors origin 'localhost:3000' is not \"*\" or scheme://host[:port] "
            "(e.g. http://localhost:3000)");
}

TEST(ServeConfig, EnvironmentErrorsNameTheVariable) {
  Resolve resolve;
  resolve.env = {{"PAGODA_PORT", "http"}};
  EXPECT_EQ(resolve.error({"-m", kModel}), "PAGODA_PORT: 'http' is not an integer");
  resolve.env = {{"PAGODA_MAX_RUNNING", "0"}};
  EXPECT_EQ(resolve.error({"-m", kModel}), "PAGODA_MAX_RUNNING: 0 is out of range 1..65536");
  resolve.env = {{"PAGODA_PREFIX_CACHING", "sometimes"}};
  EXPECT_EQ(resolve.error({"-m", kModel}),
            "PAGODA_PREFIX_CACHING: 'sometimes' is not a boolean (true or false)");
  resolve.env = {{"PAGODA_CONFIG", "/nonexistent/serve.toml"}};
  EXPECT_EQ(resolve.error({"-m", kModel}).rfind("config file '/nonexistent/serve.toml': cannot open", 0), 0u);
  // A bad value in a source that loses is never looked at.
  resolve.env = {{"PAGODA_PORT", "http"}};
  EXPECT_TRUE(resolve({"-m", kModel, "--port", "1"}).ok());
}

TEST(ServeConfig, CommandLineErrorsComeFromCli11) {
  // Unknown flags and missing values are CLI11's to report (before resolve runs).
  const Resolve resolve;
  EXPECT_NE(resolve.error({"--prot", "80"}).find("CLI11"), std::string::npos);
  EXPECT_NE(resolve.error({"--port"}).find("CLI11"), std::string::npos);
}

TEST(ServeConfig, DefaultModelBesideTheBinary) {
  TempDir dir;
  const std::string model = dir.write(std::string(kDefaultModelRelativePath), "GGUF");
  const std::filesystem::path repo = dir.path();
  EXPECT_EQ(find_default_model(repo / "build" / "pagoda", "/"), model);
  EXPECT_EQ(find_default_model(repo / "build" / "tests" / "server" / "test_server", "/"), model);
  EXPECT_EQ(find_default_model("/usr/bin/pagoda", repo), model);  // else the working directory
  EXPECT_EQ(find_default_model("/usr/bin/pagoda", "/"), std::nullopt);
}

TEST(ServeConfig, DefaultModelAndNameWhenNoneGiven) {
  const std::optional<std::string> found = default_model_path();
  const Expected<ServeConfig> config = Resolve{}({});
  if (!found) {
    ASSERT_FALSE(config.ok());
    EXPECT_NE(config.status().message().find(std::string(kDefaultModelRelativePath)), std::string::npos);
    GTEST_SKIP() << "the default model is not fetched here";
  }
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->model_path, *found);
  EXPECT_EQ(config->model_name, "SmolLM2-135M-Instruct.Q4_1");
  EXPECT_EQ(config->sources.at("model"), "default");
}

TEST(ServeConfig, HelpDocumentsEverySetting) {
  CLI::App app;
  CLI::App* serve = app.add_subcommand("serve");
  ServeOptions raw;
  add_serve_options(*serve, raw);
  const std::string help = serve->help();
  EXPECT_NE(help.find("--config"), std::string::npos);
  EXPECT_NE(help.find("PAGODA_CONFIG"), std::string::npos);
  for (const SettingSpec& spec : serve_settings()) {
    EXPECT_NE(help.find("--" + std::string(spec.name)), std::string::npos) << spec.name;
    EXPECT_NE(help.find("[env: " + env_var_name(spec.name) + "]"), std::string::npos) << spec.name;
    if (spec.kind == SettingKind::kBool) {
      EXPECT_NE(help.find("--no-" + std::string(spec.name) + " [default: " + std::string(spec.default_text) + "]"),
                std::string::npos) << spec.name;
    } else if (!spec.default_text.empty()) {
      EXPECT_NE(help.find("--" + std::string(spec.name) + " " + std::string(spec.type_name) + "=" +
                          std::string(spec.default_text)),
                std::string::npos) << spec.name;
    }
  }
  EXPECT_NE(help.find("--api-key KEY ..."), std::string::npos);  // repeatable
  EXPECT_NE(help.find("--port INT=8080 "), std::string::npos);    // not repeatable
}

TEST(ServeConfig, SettingNames) {
  EXPECT_EQ(env_var_name("max-body-bytes"), "PAGODA_MAX_BODY_BYTES");
  EXPECT_EQ(find_setting("max_body_bytes"), find_setting("max-body-bytes"));
  EXPECT_NE(find_setting("port"), nullptr);
  EXPECT_EQ(find_setting("config"), nullptr);  // a config file cannot name another
  EXPECT_EQ(find_setting("nope"), nullptr);
}

}  // namespace
}  // namespace pagoda::server
