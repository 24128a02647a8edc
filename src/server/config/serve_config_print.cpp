// pagoda serve --print-config: the resolved settings as a TOML file with their sources.

#include <string>
#include <string_view>
#include <vector>

#include "server/config/serve_config.h"
#include "server/config/serve_config_settings.h"

namespace pagoda::server {
namespace {

std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// One value as TOML, for the setting's kind.
std::string toml_value(const SettingSpec& spec, const std::string& text) {
  switch (spec.kind) {
    case SettingKind::kInteger:
    case SettingKind::kNumber:
      return text;
    case SettingKind::kBytes:
      return all_digits(text) ? text : toml_string(text);
    case SettingKind::kBool:
      return text == "on" || text == "true" || text == "1" ? "true" : "false";
    case SettingKind::kText:
    case SettingKind::kList:
      return toml_string(text);
  }
  return toml_string(text);
}

// The setting's value as text: what it was set from, what the resolver computed for the
// settings whose default depends on the machine or the model, or the table's default.
std::vector<std::string> value_texts(const SettingSpec& spec, const ServeConfig& config) {
  if (const auto given = config.values.find(spec.name); given != config.values.end()) {
    return given->second;
  }
  if (spec.name == "model") return {config.model_path};
  if (spec.name == "served-model-name") return {config.model_name};
  if (spec.name == "threads") return {std::to_string(config.backend.cpu.n_threads)};
  if (spec.default_text.empty()) return {};
  return {std::string(spec.default_text)};
}

}  // namespace

std::string print_serve_config(const ServeConfig& config) {
  std::string out = "# pagoda serve: the effective settings, each with its source\n";
  if (!config.config_file.empty()) out += "# config file: " + config.config_file + "\n";
  for (const SettingSpec& spec : serve_settings()) {
    const std::string name(spec.name);
    const auto source = config.sources.find(name);
    const std::string from = source == config.sources.end() ? "default" : source->second;
    const std::vector<std::string> texts = value_texts(spec, config);
    if (name == "api-key") {
      out += "# " + name + ": " + std::to_string(config.api_keys.size()) +
             " key(s), not shown  # " + from + "\n";
      continue;
    }
    if (texts.empty()) {
      out += "# " + name + " is not set  # " + from + "\n";
      continue;
    }
    std::string value;
    if (spec.kind == SettingKind::kList) {
      value = "[";
      for (size_t i = 0; i < texts.size(); ++i) value += (i ? ", " : "") + toml_value(spec, texts[i]);
      value += "]";
    } else {
      value = toml_value(spec, texts.back());
    }
    out += name + " = " + value + "  # " + from + "\n";
  }
  return out;
}

}  // namespace pagoda::server
