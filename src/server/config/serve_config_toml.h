#pragma once
// The TOML file of `pagoda serve --config FILE`: keys are setting names ("port",
// "max-body-bytes" or "max_body_bytes"), typed as TOML types, at the top level or in the
// sections an operator would group them in, under the names usual there:
//
//   model = "models/SmolLM2-135M-Instruct.Q4_1.gguf"      [server]   host, port, io_threads,
//   port = 8000                                                      idle_timeout, read_timeout,
//   max_body_bytes = "16MiB"                                         api_keys, api_key_file,
//   api-key = ["sk-one", "sk-two"]                                   cors_origins, shutdown_grace, webui
//                                                          [model]    path, served_name,
//   [cache]                                                           context_length, chat_template
//   kv_memory = "4GiB"                                     [engine]   device, threads, numerics,
//   eviction_policy = "lfu"                                           max_batched_tokens, max_running, ...
//                                                          [cache]    block_size, kv_memory, kv_type,
//                                                                     prefix_caching, eviction_policy
//                                                          [logging]  level, format, prompts
//                                                          [metrics]  enabled, path
//                                                          [limits]   rate_limit_rpm, max_queued,
//                                                                     max_body_bytes, max_connections
// (kSectionKeys in serve_config_toml.cpp is the whole list; a section also takes its
// settings' flat names, "[cache] kv_cache_memory".)
//
// Each value comes back as text, checked for its TOML type only; the settings table then
// checks the text as it checks flags. Unknown keys and sections, wrong types, a setting
// given twice and TOML syntax errors are errors that name the file and line.

#include <string>
#include <vector>

#include "core/status.h"
#include "server/config/serve_config_settings.h"

namespace pagoda::server {

struct TomlSetting {
  const SettingSpec* spec = nullptr;
  std::vector<std::string> values;  // one, or any number for a list
  std::string label;                // "serve.toml:3: port", for messages
};

// Parses TOML text; `path` names it in messages.
Expected<std::vector<TomlSetting>> parse_toml_settings(std::string_view text, const std::string& path);
// Reads and parses the file.
Expected<std::vector<TomlSetting>> read_toml_settings(const std::string& path);

}  // namespace pagoda::server
