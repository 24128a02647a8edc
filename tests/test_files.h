#pragma once
// Files in tests: a temporary file removed when the test ends, and a GGUF file opened
// with the test failing (not crashing) when it cannot be.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "gguf/reader.h"

namespace pagoda::testing {

// A path named `name` in the temporary folder (with the process id, so that test
// binaries running at once do not meet), removed when it goes out of scope.
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

// The GGUF file at `path`; an empty reader (and a failed test) when it does not open.
inline gguf::Reader open_gguf_or_fail(const std::string& path) {
  Expected<gguf::Reader> reader = gguf::Reader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  return reader.ok() ? std::move(reader).value() : gguf::Reader{};
}

}  // namespace pagoda::testing
