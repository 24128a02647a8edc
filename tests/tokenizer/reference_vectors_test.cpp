// The reference's own test vectors: every string of ggml-vocab-X.gguf.inp must encode
// (no BOS, special tokens not parsed) to exactly the ids of ggml-vocab-X.gguf.out, and
// decode / stream-decode back consistently.

#include <gtest/gtest.h>

#include "tokenizer/tokenizer_test_util.h"

namespace pagoda::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::read_vectors;
using testing::vocab_path;

class ReferenceVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceVectors, EncodeMatchesExactly) {
  const std::string path = vocab_path(GetParam());
  const Tokenizer tokenizer = load_tokenizer(path);
  const auto vectors = read_vectors(path);
  ASSERT_EQ(vectors.size(), 46u);
  for (const auto& vector : vectors) {
    const std::vector<TokenId> ids = tokenizer.encode(vector.text, /*add_special=*/false, /*parse_special=*/false);
    EXPECT_EQ(testing::ids_to_string(ids), testing::ids_to_string(vector.expected))
        << "text: '" << vector.text << "'";
  }
}

TEST_P(ReferenceVectors, StreamingDecodeEqualsDecode) {
  const std::string path = vocab_path(GetParam());
  const Tokenizer tokenizer = load_tokenizer(path);
  for (const auto& vector : read_vectors(path)) {
    const std::string whole = tokenizer.decode(vector.expected);
    EXPECT_TRUE(testing::is_valid_utf8(whole));
    EXPECT_EQ(testing::stream_decode(tokenizer, vector.expected), whole) << "text: '" << vector.text << "'";
    DecodeOptions shown;
    shown.special = true;
    shown.clean_spaces = false;
    EXPECT_EQ(testing::stream_decode(tokenizer, vector.expected, shown), tokenizer.decode(vector.expected, shown));
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, ReferenceVectors,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "starcoder", "falcon"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace pagoda::tokenizer
