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
    const std::string label = path + ":" + std::to_string(node.source().begin.line) + ": " +
                              std::string(key.str());
    const SettingSpec* spec = find_setting(key.str());
    if (!spec) {
      return invalid_argument(path + ":" + std::to_string(node.source().begin.line) +
                              ": unknown setting '" + std::string(key.str()) +
                              "' (see pagoda serve --help)");
    }
    for (const TomlSetting& earlier : settings) {
      if (earlier.spec == spec) return invalid_argument(label + ": set twice (as '-' and '_' names)");
    }
    PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> values, node_values(*spec, node, label));
    settings.push_back({spec, std::move(values), label});
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
