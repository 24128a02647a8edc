#pragma once
// The TOML file of `pagoda serve --config FILE`: a flat table whose keys are setting
// names ("port", "max-body-bytes" or "max_body_bytes"), typed as TOML types:
//
//   model = "models/SmolLM2-135M-Instruct.Q4_1.gguf"
//   port = 8000
//   max_body_bytes = "16MiB"
//   api-key = ["sk-one", "sk-two"]
//   prefix_caching = false
//
// Each value comes back as text, checked for its TOML type only; the settings table then
// checks the text as it checks flags. Unknown keys, wrong types, a setting given twice and
// TOML syntax errors are errors that name the file and line.

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
