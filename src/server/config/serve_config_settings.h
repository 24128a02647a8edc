#pragma once
// The table of `pagoda serve` settings: for each, its flag, its environment variable, its
// TOML key, its help text, and how its text becomes a ServeConfig field. One table feeds
// the flags (add_serve_options), the environment and the TOML file (resolve_serve_config).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "server/config/serve_config.h"

namespace pagoda::server {

// How a setting is written; decides the TOML types accepted and the list splitting.
enum class SettingKind {
  kText,     // a string (TOML string)
  kInteger,  // a decimal integer (TOML integer)
  kNumber,   // a decimal number (TOML float or integer)
  kBytes,    // a size: 8388608, "512MiB" (TOML integer or string)
  kBool,     // a flag with a --no- form (TOML boolean)
  kList,     // repeatable flag; comma-separated in the environment (TOML array of strings, or a string)
};

struct SettingSpec {
  std::string_view name;        // the long flag without "--", and the TOML key ("max-body-bytes")
  std::string_view short_flag;  // "-m", or empty
  SettingKind kind;
  std::string_view type_name;   // in --help: "INT", "BYTES", "text|json"
  std::string_view default_text;  // in --help; empty when the help text says it
  std::string_view group;       // --help section
  std::string_view help;
  // Sets the setting from its values (exactly one, or any number for kList). Messages
  // name neither the setting nor the source: the caller prefixes both.
  Status (*apply)(ServeConfig& config, const std::vector<std::string>& values);
};

std::span<const SettingSpec> serve_settings();
// The setting a flag or TOML key names, '-' and '_' alike; nullptr when none.
const SettingSpec* find_setting(std::string_view name);
// "max-body-bytes" -> "PAGODA_MAX_BODY_BYTES".
std::string env_var_name(std::string_view setting_name);

}  // namespace pagoda::server
