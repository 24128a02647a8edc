#pragma once
// Every setting of `pagoda serve`, and where each comes from. In order of precedence:
//   1. a command-line flag               --max-body-bytes 16MiB
//   2. an environment variable            PAGODA_MAX_BODY_BYTES=16MiB  (lists: comma-separated)
//   3. the TOML file of --config (or PAGODA_CONFIG), keys named like the long flags,
//      with '-' or '_':                   max_body_bytes = "16MiB"
//   4. the default.
// `pagoda serve --help` lists each setting with its environment variable and default.
// An invalid value anywhere stops the start with a Status naming the setting and its
// source: "--port: 70000 is out of range 0..65535", "PAGODA_PORT: 'x' is not an
// integer", "serve.toml:3: port: expected an integer, got a string".
//
//   ServeOptions raw;
//   add_serve_options(*serve, raw);              // before parsing
//   ... app.parse(argc, argv) ...
//   Expected<ServeConfig> config = resolve_serve_config(*serve, raw, process_environment());

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend_options.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "server/logging/logging.h"

namespace pagoda::server {

struct ServeConfig {
  // Model.
  std::string model_path;          // GGUF file; default: the default model (default_model_path())
  std::string model_name;          // the id clients use (`model`); default: the file's stem
  std::string chat_template_file;  // a Jinja template replacing the model's; empty: the model's
  // The device and each backend's settings (threads, numerics, GPU memory share);
  // resolved: cpu.n_threads > 0.
  backend::BackendOptions backend;

  // HTTP.
  std::string host = "127.0.0.1";
  uint16_t port = 8080;            // 0: any free port
  int io_threads = 2;              // threads running the connections
  size_t max_body_bytes = 8u << 20;
  std::chrono::seconds idle_timeout{60};  // keep-alive connection without a request
  std::chrono::seconds read_timeout{30};  // for a request's head and body to arrive
  size_t max_connections = 10000;
  bool webui = true;               // the chat page at / (web/, embedded)
  bool metrics = true;             // the Prometheus text at metrics_path
  std::string metrics_path = "/metrics";

  // Access and limits.
  std::vector<std::string> api_keys;   // empty (and no file): no authentication
  std::string api_key_file;            // one key per line; see api_keys.h
  std::vector<std::string> cors_origins;  // "*" or exact origins; empty: no CORS headers
  int64_t rate_limit_rpm = 0;          // requests per minute per key (or client); 0: off
  int64_t max_queued = 256;            // requests waiting for the engine; past it 503; 0: no bound
  int32_t max_priority_boost = 0;      // a request's priority may go down to -this (see ApiServiceOptions)
  std::chrono::seconds shutdown_grace{30};  // SIGTERM: running requests may finish this long

  // Logs.
  LogFormat log_format = LogFormat::kText;
  spdlog::level::level_enum log_level = spdlog::level::info;
  bool log_prompts = false;

  // The engine (max_model_len 0: the model's training context).
  engine::EngineConfig engine;

  std::string config_file;  // the TOML file read, if any
  // Where each setting's value came from, by setting name: "--port", "PAGODA_PORT",
  // "serve.toml", or "default".
  std::map<std::string, std::string, std::less<>> sources;
  // The text each setting given (not defaulted) was set from, by setting name.
  std::map<std::string, std::vector<std::string>, std::less<>> values;

  LoggingOptions logging() const { return {log_format, log_level, log_prompts}; }
};

// The raw text of the flags, as CLI11 parsed them. Bound by add_serve_options.
struct ServeOptions {
  std::string config_file;  // --config
  bool print_config = false;  // --print-config
  // Values given on the command line, by setting name ("port"); several for a repeated
  // list flag (--api-key a --api-key b), the last one for others.
  std::map<std::string, std::vector<std::string>, std::less<>> flags;
};

// The effective settings as TOML (flat keys, one a line), each with where its value came
// from, for `pagoda serve --print-config`:
//   port = 9000  # PAGODA_PORT
//   max-queued = 256  # default
// API keys are never shown (their count and source are). A setting with no default and
// no value is a comment.
std::string print_serve_config(const ServeConfig& config);

// Reads an environment variable; nothing when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;
EnvLookup process_environment();

// Adds --config and one flag per setting (with help text naming its environment variable
// and default) to `serve`. `raw` must outlive the parse.
void add_serve_options(CLI::App& serve, ServeOptions& raw);

// Combines flags, environment, TOML file and defaults (see the top of this file), checks
// every value and fills in the computed defaults (model, model name, threads).
Expected<ServeConfig> resolve_serve_config(const CLI::App& serve, const ServeOptions& raw,
                                           const EnvLookup& getenv);

// The default model, relative to the repository: models/SmolLM2-135M-Instruct.Q4_1.gguf.
inline constexpr std::string_view kDefaultModelRelativePath = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
// Where the default model is: beside the running binary's repository (the binary's
// directory or one of its parents, as for build/pagoda), else under the working
// directory. Nothing when neither has it.
std::optional<std::string> default_model_path();
// The same search from a given executable path and working directory.
std::optional<std::string> find_default_model(const std::filesystem::path& executable,
                                              const std::filesystem::path& working_directory);

}  // namespace pagoda::server
