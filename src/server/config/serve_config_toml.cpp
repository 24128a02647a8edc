#include "server/config/serve_config_toml.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <toml++/toml.h>

namespace pagoda::server {
namespace {

const char* toml_type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    default: return "nothing";
  }
}

Status wrong_type(const std::string& label, const char* expected, const toml::node& node) {
  return invalid_argument(label + ": expected " + expected + ", got " + toml_type_name(node.type()));
}

// The node's value as setting text, if its TOML type suits the setting's kind.
Expected<std::vector<std::string>> node_values(const SettingSpec& spec, const toml::node& node,
                                               const std::string& label) {
  const auto* text = node.as_string();
  const auto* integer = node.as_integer();
  switch (spec.kind) {
    case SettingKind::kText:
      if (text) return std::vector<std::string>{text->get()};
      return wrong_type(label, "a string", node);
    case SettingKind::kInteger:
      if (integer) return std::vector<std::string>{std::to_string(integer->get())};
      return wrong_type(label, "an integer", node);
    case SettingKind::kNumber:
      if (integer) return std::vector<std::string>{std::to_string(integer->get())};
      if (const auto* number = node.as_floating_point()) {
        return std::vector<std::string>{std::to_string(number->get())};
      }
      return wrong_type(label, "a number", node);
    case SettingKind::kBytes:
      if (integer) return std::vector<std::string>{std::to_string(integer->get())};
      if (text) return std::vector<std::string>{text->get()};
      return wrong_type(label, "an integer or a string such as \"4GiB\"", node);
    case SettingKind::kBool:
      if (const auto* flag = node.as_boolean()) {
        return std::vector<std::string>{flag->get() ? "true" : "false"};
      }
      return wrong_type(label, "true or false", node);
    case SettingKind::kList: {
      if (text) return std::vector<std::string>{text->get()};
      const auto* array = node.as_array();
      if (!array) return wrong_type(label, "an array of strings", node);
      std::vector<std::string> values;
      for (const toml::node& item : *array) {
        const auto* item_text = item.as_string();
        if (!item_text) return wrong_type(label, "an array of strings", item);
        values.push_back(item_text->get());
      }
      return values;
    }
  }
  return internal_error(label + ": unknown setting kind");
}

// A key of a section and the setting it names.
struct SectionKey {
  std::string_view section;
  std::string_view key;
  std::string_view setting;
};

constexpr SectionKey kSectionKeys[] = {
    {"server", "host", "host"},
    {"server", "port", "port"},
    {"server", "io_threads", "io-threads"},
    {"server", "idle_timeout", "idle-timeout"},
    {"server", "read_timeout", "read-timeout"},
    {"server", "max_connections", "max-connections"},
    {"server", "api_keys", "api-key"},
    {"server", "api_key", "api-key"},
    {"server", "api_key_file", "api-key-file"},
    {"server", "cors_origins", "cors-origin"},
    {"server", "cors_origin", "cors-origin"},
    {"server", "shutdown_grace", "shutdown-grace"},
    {"server", "webui", "webui"},
    {"model", "path", "model"},
    {"model", "file", "model"},
    {"model", "served_name", "served-model-name"},
    {"model", "served_model_name", "served-model-name"},
    {"model", "name", "served-model-name"},
    {"model", "context_length", "max-model-len"},
    {"model", "max_model_len", "max-model-len"},
    {"model", "chat_template", "chat-template"},
    {"engine", "device", "device"},
    {"engine", "threads", "threads"},
    {"engine", "numerics", "numerics"},
    {"engine", "mmap", "mmap"},
    {"engine", "gpu_memory_utilization", "gpu-memory-utilization"},
    {"engine", "batch_invariant", "batch-invariant"},
    {"engine", "max_batched_tokens", "max-batched-tokens"},
    {"engine", "max_running", "max-running"},
    {"engine", "max_model_len", "max-model-len"},
    {"cache", "block_size", "block-size"},
    {"cache", "kv_memory", "kv-cache-memory"},
    {"cache", "kv_cache_memory", "kv-cache-memory"},
    {"cache", "kv_type", "kv-cache-type"},
    {"cache", "kv_cache_type", "kv-cache-type"},
    {"cache", "prefix_caching", "prefix-caching"},
    {"cache", "eviction_policy", "prefix-cache-eviction"},
    {"cache", "eviction", "prefix-cache-eviction"},
    {"cache", "prefix_cache_eviction", "prefix-cache-eviction"},
    {"speculative", "ngram", "speculative-ngram"},
    {"speculative", "model", "speculative-model"},
    {"speculative", "draft_model", "speculative-model"},
    {"speculative", "num_tokens", "num-speculative-tokens"},
    {"speculative", "num_speculative_tokens", "num-speculative-tokens"},
    {"speculative", "adaptive", "speculative-adaptive"},
    {"speculative", "ngram_min", "speculative-ngram-min"},
    {"speculative", "ngram_max", "speculative-ngram-max"},
    {"speculative", "p_min", "speculative-p-min"},
    {"metrics", "enabled", "metrics"},
    {"metrics", "path", "metrics-path"},
    {"metrics", "metrics_path", "metrics-path"},
    {"logging", "level", "log-level"},
    {"logging", "log_level", "log-level"},
    {"logging", "format", "log-format"},
    {"logging", "log_format", "log-format"},
    {"logging", "prompts", "log-prompts"},
    {"logging", "log_prompts", "log-prompts"},
    {"limits", "rate_limit_rpm", "rate-limit-rpm"},
    {"limits", "max_queued", "max-queued"},
    {"limits", "max_body_bytes", "max-body-bytes"},
    {"limits", "max_connections", "max-connections"},
    {"limits", "max_priority_boost", "max-priority-boost"},
};

// '-' and '_' alike, as for flat keys.
bool same_key(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] == '-' ? '_' : a[i]) != (b[i] == '-' ? '_' : b[i])) return false;
  }
  return true;
}

bool is_section(std::string_view name) {
  for (const SectionKey& entry : kSectionKeys) {
    if (same_key(entry.section, name)) return true;
  }
  return false;
}

// Whether the section groups the setting (under any of its names).
bool in_section(std::string_view section, const SettingSpec& spec) {
  for (const SectionKey& entry : kSectionKeys) {
    if (same_key(entry.section, section) && entry.setting == spec.name) return true;
  }
  return false;
}

const SettingSpec* find_section_setting(std::string_view section, std::string_view key) {
  for (const SectionKey& entry : kSectionKeys) {
    if (same_key(entry.section, section) && same_key(entry.key, key)) return find_setting(entry.setting);
  }
  return nullptr;
}

// Adds one key's setting, or fails naming the key (`shown`: "port" or "cache.kv_memory").
Status add_setting(std::vector<TomlSetting>& settings, const SettingSpec* spec, const toml::node& node,
                   const std::string& shown, const std::string& path) {
  const std::string at = path + ":" + std::to_string(node.source().begin.line);
  if (!spec) return invalid_argument(at + ": unknown setting '" + shown + "' (see pagoda serve --help)");
  const std::string label = at + ": " + shown;
  for (const TomlSetting& earlier : settings) {
    if (earlier.spec == spec) {
      return invalid_argument(label + ": '" + std::string(spec->name) + "' is set twice (" +
                              earlier.label + ")");
    }
  }
  PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> values, node_values(*spec, node, label));
  settings.push_back({spec, std::move(values), label});
  return Status::ok_status();
}

}  // namespace

Expected<std::vector<TomlSetting>> parse_toml_settings(std::string_view text, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    const toml::source_position& at = error.source().begin;
    return invalid_argument(path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                            ": TOML syntax error: " + std::string(error.description()));
  }
  std::vector<TomlSetting> settings;
  for (const auto& [key, node] : table) {
    const std::string name(key.str());
    const toml::table* section = node.as_table();
    if (section == nullptr) {
      PAGODA_TRY(add_setting(settings, find_setting(name), node, name, path));
      continue;
    }
    if (!is_section(name)) {
      return invalid_argument(path + ":" + std::to_string(node.source().begin.line) +
                              ": unknown section [" + name +
                              "] (sections: server, model, engine, cache, speculative, logging, metrics, limits)");
    }
    for (const auto& [inner_key, inner] : *section) {
      const std::string inner_name(inner_key.str());
      // A section takes its own names and, for what it groups, the flat names too.
      const SettingSpec* spec = find_section_setting(name, inner_name);
      const SettingSpec* flat = spec ? nullptr : find_setting(inner_name);
      if (flat && in_section(name, *flat)) spec = flat;
      PAGODA_TRY(add_setting(settings, spec, inner, name + "." + inner_name, path));
    }
  }
  return settings;
}

Expected<std::vector<TomlSetting>> read_toml_settings(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return io_error("config file '" + path + "': cannot open: " + std::strerror(errno));
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) return io_error("config file '" + path + "': cannot read");
  return parse_toml_settings(text, path);
}

}  // namespace pagoda::server
