#pragma once
// What the serve-config tests share: the test models, a scratch directory for config
// and key files, and `pagoda serve ARGS` resolved with a fake environment.

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/config/serve_config.h"
#include "test_data.h"

namespace pagoda::server::testing {

inline const std::string kModel = pagoda::testing::model_path("stories260K.gguf");
inline const std::string kOtherModel = pagoda::testing::model_path("stories260K-Q8_0.gguf");

// A scratch directory for config and key files, removed at the end of the test.
class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("pagoda_serve_config_" + std::to_string(getpid()) + "_" + std::to_string(counter_++))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
    return file.string();
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

// `pagoda serve ARGS` parsed by CLI11 and resolved with a fake environment.
struct Resolve {
  std::map<std::string, std::string> env;

  Expected<ServeConfig> operator()(std::vector<std::string> args) const {
    CLI::App app;
    CLI::App* serve = app.add_subcommand("serve");
    ServeOptions raw;
    add_serve_options(*serve, raw);
    args.insert(args.begin(), {"pagoda", "serve"});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return invalid_argument(std::string("CLI11: ") + e.what());
    }
    const EnvLookup lookup = [this](std::string_view name) -> std::optional<std::string> {
      const auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    return resolve_serve_config(*serve, raw, lookup);
  }

  // The error message of a resolve that must fail.
  std::string error(std::vector<std::string> args) const {
    const Expected<ServeConfig> config = (*this)(std::move(args));
    EXPECT_FALSE(config.ok());
    return config.ok() ? "<resolved>" : config.status().message();
  }
};

}  // namespace pagoda::server::testing
