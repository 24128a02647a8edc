// The tokenizers of the test models against the reference's own tokenization of the
// prompts in reference/generation and reference/scoring, and its generated pieces: one
// test per reference file, skipped (with a line) where its model is absent.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer_test_util.h"

namespace pagoda::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::model_path;
using testing::reference_path;

const Tokenizer& model_tokenizer(const std::string& model_file) {
  static std::map<std::string, Tokenizer> cache;
  auto it = cache.find(model_file);
  if (it == cache.end()) {
    it = cache.emplace(model_file, load_tokenizer(model_path(model_file))).first;
  }
  return it->second;
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(testing::read_file(path)); }

// The .json files of reference/<folder>, sorted, by their path under reference/.
std::vector<std::string> reference_files(const std::string& folder) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(reference_path(folder))) {
    if (entry.path().extension() == ".json") {
      files.push_back(folder + "/" + entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A test's name from its file: "scoring/rand-gpt2-Q8_0.json" -> "rand_gpt2_Q8_0".
std::string file_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// The reference file of the running test, and the model it names: the test skips where
// that model is absent (the large random-weight models, on a fresh clone).
class ReferenceFile : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    doc_ = read_json(reference_path(GetParam()));
    PAGODA_SKIP_IF_MISSING(model_path(doc_["model"].get<std::string>()));
  }
  nlohmann::json doc_;
};

std::string unescape_newlines(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

using GenerationFile = ReferenceFile;

TEST_P(GenerationFile, PromptsAndPiecesMatchTheReference) {
  const std::string& file = GetParam();
  const nlohmann::json& doc = doc_;
  const Tokenizer& tokenizer = model_tokenizer(doc["model"].get<std::string>());
  EXPECT_EQ(tokenizer.n_vocab(), doc["n_vocab"].get<int>());
  EXPECT_EQ(tokenizer.add_bos(), doc["add_bos"].get<bool>());
  for (const auto& c : doc["cases"]) {
    // In these files a "\n" inside a prompt stands for a newline.
    const std::string prompt = unescape_newlines(c["prompt"].get<std::string>());
    EXPECT_EQ(tokenizer.encode(prompt, true, true), c["prompt_tokens"].get<std::vector<TokenId>>())
        << file << ": " << prompt;
    std::vector<TokenId> generated;
    std::string pieces;
    for (const auto& step : c["steps"]) {
      const TokenId id = step["token"].get<TokenId>();
      EXPECT_EQ(tokenizer.token_to_piece(id), step["piece"].get<std::string>()) << file << ": token " << id;
      generated.push_back(id);
      pieces += step["piece"].get<std::string>();
    }
    EXPECT_EQ(pieces, c["text"].get<std::string>());
    // Generated text continues the prompt: no leading space is stripped.
    DecodeOptions continuing;
    continuing.strip_leading_space = false;
    EXPECT_EQ(tokenizer.decode(generated, continuing), c["text"].get<std::string>()) << file;
    EXPECT_EQ(testing::stream_decode(tokenizer, generated, continuing), c["text"].get<std::string>()) << file;
  }
}

using ScoringFile = ReferenceFile;

TEST_P(ScoringFile, PromptsMatchTheReference) {
  const std::string& file = GetParam();
  const nlohmann::json& doc = doc_;
  const Tokenizer& tokenizer = model_tokenizer(doc["model"].get<std::string>());
  EXPECT_EQ(tokenizer.n_vocab(), doc["n_vocab"].get<int>());
  for (const auto& c : doc["cases"]) {
    const std::string prompt = c["prompt"].get<std::string>();  // "\n" here is backslash, n
    const auto expected = c["tokens"].get<std::vector<TokenId>>();
    const auto ids = tokenizer.encode(prompt, true, true);
    EXPECT_EQ(ids, expected) << file << ": " << prompt;
    // Without its BOS the text decodes back exactly.
    const size_t skip = tokenizer.add_bos() ? 1 : 0;
    EXPECT_EQ(tokenizer.decode(std::span(ids).subspan(skip)), prompt) << file;
  }
}

TEST(ModelTokenizers, Stories260KVocabulary) {
  const Tokenizer& tokenizer = model_tokenizer("stories260K.gguf");
  EXPECT_EQ(tokenizer.type(), VocabType::kSentencePiece);
  EXPECT_EQ(tokenizer.n_vocab(), 512);
  EXPECT_EQ(tokenizer.bos(), 1);
  EXPECT_EQ(tokenizer.eos(), 2);
  EXPECT_EQ(tokenizer.unk(), 0);
  EXPECT_EQ(tokenizer.sep(), kNoToken);  // the file's 0xFFFFFFFF means none
  EXPECT_TRUE(tokenizer.add_bos());
  EXPECT_FALSE(tokenizer.add_eos());
  EXPECT_TRUE(tokenizer.is_eog(2));
  EXPECT_FALSE(tokenizer.is_eog(1));
  EXPECT_EQ(tokenizer.eog_tokens(), std::vector<TokenId>{2});
  EXPECT_EQ(tokenizer.token_to_piece(1), "");
  EXPECT_EQ(tokenizer.token_to_piece(1, true), "<s>");
  EXPECT_EQ(tokenizer.token_to_piece(3 + '\n'), "\n");  // <0x0A>
}

INSTANTIATE_TEST_SUITE_P(ModelTokenizers, GenerationFile,
                         ::testing::ValuesIn(reference_files("generation")), file_test_name);
INSTANTIATE_TEST_SUITE_P(ModelTokenizers, ScoringFile,
                         ::testing::ValuesIn(reference_files("scoring")), file_test_name);

TEST(ModelTokenizers, RandomGpt2Vocabulary) {
  PAGODA_SKIP_IF_MISSING(model_path("rand-gpt2-Q8_0.gguf"));
  const Tokenizer& tokenizer = model_tokenizer("rand-gpt2-Q8_0.gguf");
  EXPECT_EQ(tokenizer.type(), VocabType::kBytePairEncoding);
  EXPECT_EQ(tokenizer.pre_name(), "gpt-2");
  EXPECT_FALSE(tokenizer.add_bos());
  EXPECT_EQ(tokenizer.eos(), 50256);
  EXPECT_TRUE(tokenizer.is_eog(50256));
  EXPECT_EQ(tokenizer.encode("Hello world", true, true), (std::vector<TokenId>{15496, 995}));
  EXPECT_EQ(tokenizer.token_to_piece(995), " world");
}

TEST(ModelTokenizers, DefaultModelSmolLM2) {
  const std::string path = std::string(PAGODA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  PAGODA_SKIP_IF_MISSING(path);
  const Tokenizer tokenizer = load_tokenizer(path);
  EXPECT_EQ(tokenizer.pre_name(), "smollm");
  const TokenId im_start = tokenizer.find_token("<|im_start|>");
  const TokenId im_end = tokenizer.find_token("<|im_end|>");
  ASSERT_NE(im_start, kNoToken);
  ASSERT_NE(im_end, kNoToken);
  EXPECT_TRUE(tokenizer.is_eog(im_end));
  const auto ids = tokenizer.encode("<|im_start|>user\nWhat is 2024?<|im_end|>", false, true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), im_start);
  EXPECT_EQ(ids.back(), im_end);
  // smollm isolates digits: "2024" is four tokens.
  const auto digits = tokenizer.encode("2024", false, false);
  EXPECT_EQ(digits.size(), 4u);
  EXPECT_EQ(tokenizer.decode(ids, {.special = true}), "<|im_start|>user\nWhat is 2024?<|im_end|>");
}

}  // namespace
}  // namespace pagoda::tokenizer
