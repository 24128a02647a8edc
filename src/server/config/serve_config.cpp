#include "server/config/serve_config.h"

#include <unistd.h>

#include <cstdlib>

#include "core/thread_pool.h"
#include "server/config/serve_config_settings.h"
#include "server/config/serve_config_toml.h"
#include "server/config/serve_config_values.h"

namespace pagoda::server {
namespace {

// One setting's values and where they came from.
struct Sourced {
  std::vector<std::string> values;
  std::string label;   // for messages: "--port", "PAGODA_PORT", "serve.toml:3: port"
  std::string source;  // for ServeConfig::sources: "--port", "PAGODA_PORT", "serve.toml"
};

std::string flag_name(const SettingSpec& spec) { return "--" + std::string(spec.name); }

// "--port INT=8080  Port to listen on (0: any free port) [env: PAGODA_PORT]"
std::string help_text(const SettingSpec& spec) {
  return std::string(spec.help) + " [env: " + env_var_name(spec.name) + "]";
}

// CLI11's help, without the "{false}" it writes after a negated flag's name
// ("--log-prompts,--no-log-prompts{false}").
class ServeHelpFormatter final : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, is_positional);
    for (size_t at; (at = name.find("{false}")) != std::string::npos;) name.erase(at, 7);
    return name;
  }
};

void add_setting_option(CLI::App& serve, const SettingSpec& spec, std::vector<std::string>& values) {
  std::string names = spec.short_flag.empty() ? "" : std::string(spec.short_flag) + ",";
  names += flag_name(spec);
  CLI::Option* option = nullptr;
  if (spec.kind == SettingKind::kBool) {
    // --log-prompts / --no-log-prompts; CLI11 records "true" / "false".
    option = serve.add_flag(names + ",!--no-" + std::string(spec.name), values, help_text(spec));
    option->option_text("[default: " + std::string(spec.default_text) + "]");
  } else {
    option = serve.add_option(names, values, help_text(spec))->type_name(std::string(spec.type_name));
    option->allow_extra_args(false);
    if (spec.kind == SettingKind::kList) {
      option->take_all();  // repeatable: every occurrence kept
    } else {
      option->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    if (!spec.default_text.empty()) option->default_str(std::string(spec.default_text));
  }
  option->group(std::string(spec.group));
}

// The command line's values, if the flag was given.
std::optional<Sourced> from_flags(const SettingSpec& spec, const CLI::App& serve,
                                  const ServeOptions& raw) {
  const CLI::Option* option = serve.get_option_no_throw(flag_name(spec));
  const auto it = raw.flags.find(spec.name);
  if (!option || option->count() == 0 || it == raw.flags.end() || it->second.empty()) {
    return std::nullopt;
  }
  std::vector<std::string> values = it->second;
  if (spec.kind != SettingKind::kList) values = {values.back()};  // the last one wins
  return Sourced{std::move(values), flag_name(spec), flag_name(spec)};
}

// PAGODA_<NAME>, if set and not blank. Lists are comma-separated.
std::optional<Sourced> from_environment(const SettingSpec& spec, const EnvLookup& getenv) {
  const std::string name = env_var_name(spec.name);
  const std::optional<std::string> value = getenv(name);
  if (!value) return std::nullopt;
  std::vector<std::string> values;
  if (spec.kind == SettingKind::kList) values = split_list(*value);
  else if (!trim_spaces(*value).empty()) values.emplace_back(trim_spaces(*value));
  if (values.empty()) return std::nullopt;
  return Sourced{std::move(values), name, name};
}

std::optional<Sourced> from_toml(const SettingSpec& spec, const std::vector<TomlSetting>& toml) {
  for (const TomlSetting& setting : toml) {
    if (setting.spec == &spec) return Sourced{setting.values, setting.label, setting.label};
  }
  return std::nullopt;
}

// The config file named by --config or PAGODA_CONFIG, read; empty when none.
Expected<std::vector<TomlSetting>> config_file_settings(const CLI::App& serve, const ServeOptions& raw,
                                                        const EnvLookup& getenv, std::string& path) {
  const CLI::Option* option = serve.get_option_no_throw("--config");
  if (option && option->count() > 0) {
    path = raw.config_file;
    if (path.empty()) return invalid_argument("--config: empty file name");
  } else if (const std::optional<std::string> env = getenv("PAGODA_CONFIG")) {
    path = std::string(trim_spaces(*env));
  }
  if (path.empty()) return std::vector<TomlSetting>{};
  return read_toml_settings(path);
}

// Defaults that depend on the machine or on other settings.
Status fill_computed_defaults(ServeConfig& config) {
  if (config.model_path.empty()) {
    const std::optional<std::string> model = default_model_path();
    if (!model) {
      return not_found("no model given (--model, PAGODA_MODEL or the config file) and the default model " +
                       std::string(kDefaultModelRelativePath) +
                       " is neither beside the pagoda binary nor under the working directory "
                       "(scripts/fetch_default_model.sh fetches it)");
    }
    config.model_path = *model;
  }
  if (config.model_name.empty()) {
    config.model_name = std::filesystem::path(config.model_path).stem().string();
  }
  if (config.backend.cpu.n_threads == 0) config.backend.cpu.n_threads = physical_core_count();
  return Status::ok_status();
}

}  // namespace

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  };
}

void add_serve_options(CLI::App& serve, ServeOptions& raw) {
  serve.formatter(std::make_shared<ServeHelpFormatter>());
  serve.add_option("--config", raw.config_file, "TOML file of settings (keys as the long flags) [env: PAGODA_CONFIG]")
      ->type_name("FILE");
  serve.add_flag("--print-config", raw.print_config,
                 "Print the effective settings and where each came from, then exit");
  for (const SettingSpec& spec : serve_settings()) {
    add_setting_option(serve, spec, raw.flags[std::string(spec.name)]);
  }
}

Expected<ServeConfig> resolve_serve_config(const CLI::App& serve, const ServeOptions& raw,
                                           const EnvLookup& getenv) {
  ServeConfig config;
  PAGODA_ASSIGN_OR_RETURN(const std::vector<TomlSetting> toml,
                          config_file_settings(serve, raw, getenv, config.config_file));
  for (const SettingSpec& spec : serve_settings()) {
    std::optional<Sourced> chosen = from_flags(spec, serve, raw);
    if (!chosen) chosen = from_environment(spec, getenv);
    if (!chosen) chosen = from_toml(spec, toml);
    const std::string name(spec.name);
    if (!chosen) {
      config.sources[name] = "default";
      continue;
    }
    const Status applied = spec.apply(config, chosen->values);
    if (!applied.ok()) return Status(applied.code(), chosen->label + ": " + applied.message());
    config.sources[name] = chosen->source;
    config.values[name] = chosen->values;
  }
  PAGODA_TRY(fill_computed_defaults(config));
  return config;
}

std::optional<std::string> find_default_model(const std::filesystem::path& executable,
                                              const std::filesystem::path& working_directory) {
  std::error_code error;
  auto has_model = [&](const std::filesystem::path& dir) {
    return std::filesystem::is_regular_file(dir / kDefaultModelRelativePath, error);
  };
  // build/pagoda -> build/ -> the repository; tests sit deeper (build/tests/server/).
  std::filesystem::path dir = executable.parent_path();
  for (int depth = 0; depth < 5 && !dir.empty(); ++depth) {
    if (has_model(dir)) return (dir / kDefaultModelRelativePath).string();
    if (dir == dir.root_path()) break;
    dir = dir.parent_path();
  }
  if (!working_directory.empty() && has_model(working_directory)) {
    return (working_directory / kDefaultModelRelativePath).string();
  }
  return std::nullopt;
}

std::optional<std::string> default_model_path() {
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path cwd = std::filesystem::current_path(error);
  return find_default_model(executable, cwd);
}

}  // namespace pagoda::server
