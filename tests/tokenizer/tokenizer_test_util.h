#pragma once
// Shared helpers for the tokenizer tests: loading the reference's vocabularies
// (tests/data/reference/tokenizer) and reading llama.cpp-style test vectors.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "test_data.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer::testing {

using ::pagoda::testing::model_path;  // test_data.h
using ::pagoda::testing::reference_path;

inline std::string vocab_path(const std::string& name) {
  return reference_path("tokenizer/ggml-vocab-" + name + ".gguf");
}

// Loads a tokenizer, failing the calling test with the error if it cannot.
inline Tokenizer load_tokenizer(const std::string& path) {
  auto reader = gguf::Reader::open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) throw std::runtime_error(reader.status().message());
  auto tokenizer = Tokenizer::from_gguf(*reader);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  if (!tokenizer.ok()) throw std::runtime_error(tokenizer.status().message());
  return std::move(tokenizer).value();
}

struct TestVector {
  std::string text;
  std::vector<TokenId> expected;  // without BOS
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// X.gguf.inp holds the strings, each followed by "\n__ggml_vocab_test__\n" (the last one
// too); X.gguf.out the expected ids of each, one line each, space-separated.
inline std::vector<TestVector> read_vectors(const std::string& gguf_path) {
  const std::string inputs = read_file(gguf_path + ".inp");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<TestVector> vectors;
  for (size_t pos = 0; pos < inputs.size();) {
    const size_t next = inputs.find(separator, pos);
    if (next == std::string::npos) {
      vectors.push_back({inputs.substr(pos), {}});
      break;
    }
    vectors.push_back({inputs.substr(pos, next - pos), {}});
    pos = next + separator.size();
  }
  std::istringstream outputs(read_file(gguf_path + ".out"));
  std::string line;
  for (size_t i = 0; std::getline(outputs, line); ++i) {
    if (i >= vectors.size()) {
      ADD_FAILURE() << gguf_path << ".out has more lines than .inp has strings";
      break;
    }
    std::istringstream ids(line);
    for (TokenId id; ids >> id;) vectors[i].expected.push_back(id);
  }
  return vectors;
}

inline std::string ids_to_string(const std::vector<TokenId>& ids) {
  std::string out;
  for (TokenId id : ids) {
    if (!out.empty()) out += ' ';
    out += std::to_string(id);
  }
  return out;
}

// Concatenates what a StreamingDetokenizer returns for `ids`, checking each part is
// valid UTF-8.
std::string stream_decode(const Tokenizer& tokenizer, const std::vector<TokenId>& ids,
                          const DecodeOptions& options = {});

bool is_valid_utf8(std::string_view text);

}  // namespace pagoda::tokenizer::testing
