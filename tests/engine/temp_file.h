#pragma once
// A file path in the test's temporary folder, removed when the test ends.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace pagoda::engine::testing {

class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               ("pagoda_" + std::to_string(::getpid()) + "_" + name))
                  .string()) {}
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace pagoda::engine::testing
