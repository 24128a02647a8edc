#pragma once
// Where the tests find the files they read, and the line a test skips with when one is
// absent.
//
// The small fixtures are committed under tests/data/ (PAGODA_TEST_DATA_DIR): the
// stories260K models, the reference outputs, the tokenizer vocabularies (see the README
// there). The large random-weight models (models/rand-*.gguf, about 100 MB) are not in
// the repository: they are read from the shared folder beside the checkout
// (PAGODA_SHARED_DIR, ../shared by default), which a fresh clone lacks; a test that needs
// one skips with PAGODA_SKIP_IF_MISSING. Both folders are set at configure time
// (tests/CMakeLists.txt).

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace pagoda::testing {

// PAGODA_TEST_DATA_DIR/relative where that file is, else PAGODA_SHARED_DIR/relative:
// data_path("models/stories260K.gguf") is committed, "models/rand-gpt2-Q8_0.gguf" is not.
inline std::string data_path(const std::string& relative) {
  const std::filesystem::path committed = std::filesystem::path(PAGODA_TEST_DATA_DIR) / relative;
  if (std::filesystem::exists(committed)) return committed.string();
  return (std::filesystem::path(PAGODA_SHARED_DIR) / relative).string();
}

// A test model by file name ("stories260K-Q8_0.gguf", "rand-llama-Q8_0.gguf").
inline std::string model_path(const std::string& file) { return data_path("models/" + file); }

// A reference output by its path under reference/ ("scoring/stories260K.json").
inline std::string reference_path(const std::string& relative) {
  return data_path("reference/" + relative);
}

// The one line a test skips with when `path` is absent: the file, and where it comes from.
inline std::string missing_file_line(const std::string& path) {
  const auto under = [&](const std::string& folder) { return path.rfind(folder + "/", 0) == 0; };
  std::string why;
  if (under(PAGODA_SHARED_DIR)) {
    why = " (a large test model, not in the repository: it is read from the shared folder "
          "beside the checkout)";
  } else if (under(std::string(PAGODA_SOURCE_DIR) + "/models")) {
    why = " (the default model: scripts/fetch_default_model.sh fetches it)";
  }
  return "missing " + path + why;
}

}  // namespace pagoda::testing

// Skips the running test, with one line naming the file, when `path` is absent. Used in a
// test body or a fixture's SetUp; in a helper function it returns from the helper only.
#define PAGODA_SKIP_IF_MISSING(path)                                                   \
  do {                                                                                 \
    const std::string pagoda_required_file_ = (path);                                  \
    if (!std::filesystem::exists(pagoda_required_file_))                               \
      GTEST_SKIP() << ::pagoda::testing::missing_file_line(pagoda_required_file_);     \
  } while (false)
