// Vocabularies built in memory with gguf::Writer: defaults, derived special tokens, and
// clear errors for what cannot be tokenized.

#include <gtest/gtest.h>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {
namespace {

// A small byte-level BPE vocabulary: the letters a, b, c, Ġ (space), their merges, and
// the tokens the test adds.
gguf::Writer bpe_writer(std::vector<std::string> extra_tokens = {}, std::string pre = "gpt-2") {
  gguf::Writer writer;
  std::vector<std::string> tokens = {"a", "b", "c", "\xC4\xA0", "ab", "\xC4\xA0" "ab"};
  tokens.insert(tokens.end(), extra_tokens.begin(), extra_tokens.end());
  EXPECT_TRUE(writer.set_string("tokenizer.ggml.model", "gpt2").ok());
  EXPECT_TRUE(writer.set_string("tokenizer.ggml.pre", pre).ok());
  EXPECT_TRUE(writer.set_string_array("tokenizer.ggml.tokens", tokens).ok());
  EXPECT_TRUE(writer.set_string_array("tokenizer.ggml.merges", {"a b", "\xC4\xA0 ab"}).ok());
  return writer;
}

Expected<Tokenizer> build(const gguf::Writer& writer) {
  const std::vector<uint8_t> bytes = writer.serialize();
  PAGODA_ASSIGN_OR_RETURN(const gguf::Reader reader, gguf::Reader::parse(bytes, "vocab.gguf"));
  return Tokenizer::from_gguf(reader);  // the tokenizer keeps nothing of the reader
}

TEST(VocabMetadata, SmallBpeVocabulary) {
  auto tokenizer = build(bpe_writer());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ(tokenizer->encode("ab ab c", false, false), (std::vector<TokenId>{4, 5, 3, 2}));
  EXPECT_EQ(tokenizer->decode(std::vector<TokenId>{4, 5}), "ab ab");
  // BPE defaults: no BOS added, and id 11 (the default BOS/EOS) is outside this vocabulary.
  EXPECT_FALSE(tokenizer->add_bos());
  EXPECT_EQ(tokenizer->bos(), kNoToken);
  EXPECT_EQ(tokenizer->eos(), kNoToken);
}

TEST(VocabMetadata, UnknownPreTokenizerIsAnError) {
  auto tokenizer = build(bpe_writer({}, "no-such-pre"));
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(tokenizer.status().message(), "vocab.gguf: unknown pre-tokenizer 'no-such-pre'");
}

TEST(VocabMetadata, UnsupportedTokenizerModelsAreNamed) {
  for (const std::string model : {"bert", "t5", "rwkv", "something-else"}) {
    gguf::Writer writer = bpe_writer();
    ASSERT_TRUE(writer.set_string("tokenizer.ggml.model", model).ok());
    auto tokenizer = build(writer);
    ASSERT_FALSE(tokenizer.ok());
    EXPECT_EQ(tokenizer.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(tokenizer.status().message().find("'" + model + "'"), std::string::npos) << tokenizer.status().message();
  }
}

TEST(VocabMetadata, BrokenVocabulariesAreErrors) {
  {
    gguf::Writer writer;
    ASSERT_TRUE(writer.set_string("tokenizer.ggml.model", "llama").ok());
    auto tokenizer = build(writer);  // no token list
    ASSERT_FALSE(tokenizer.ok());
    EXPECT_NE(tokenizer.status().message().find("tokenizer.ggml.tokens"), std::string::npos);
  }
  {
    gguf::Writer writer = bpe_writer({"a"});  // "a" twice
    auto tokenizer = build(writer);
    ASSERT_FALSE(tokenizer.ok());
    EXPECT_NE(tokenizer.status().message().find("duplicate token"), std::string::npos);
  }
  {
    gguf::Writer writer = bpe_writer();
    ASSERT_TRUE(writer.set_array<float>("tokenizer.ggml.scores", {0.0f, 1.0f}).ok());  // fewer than tokens
    EXPECT_FALSE(build(writer).ok());
  }
  {
    gguf::Writer writer = bpe_writer();
    ASSERT_TRUE(writer.set_bool("tokenizer.ggml.add_bos_token", true).ok());  // but no BOS token
    auto tokenizer = build(writer);
    ASSERT_FALSE(tokenizer.ok());
    EXPECT_NE(tokenizer.status().message().find("BOS"), std::string::npos);
  }
  {
    gguf::Writer writer = bpe_writer();
    ASSERT_TRUE(writer.set_string("tokenizer.ggml.merges", "not an array").ok());
    EXPECT_FALSE(build(writer).ok());
  }
}

TEST(VocabMetadata, EndOfTurnTokensAreFoundByText) {
  // <|im_end|> typed as normal text still ends generation and becomes a control token.
  gguf::Writer writer = bpe_writer({"<|im_start|>", "<|im_end|>"});
  ASSERT_TRUE(writer.set_u32("tokenizer.ggml.eos_token_id", 7).ok());
  auto tokenizer = build(writer);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_EQ(tokenizer->eot(), 7);
  EXPECT_TRUE(tokenizer->is_eog(7));
  EXPECT_TRUE(tokenizer->is_control(7));
  EXPECT_FALSE(tokenizer->is_eog(6));
  EXPECT_EQ(tokenizer->encode("ab<|im_end|>", false, true), (std::vector<TokenId>{4, 7}));
  EXPECT_EQ(tokenizer->decode(std::vector<TokenId>{4, 7}), "ab");
}

TEST(VocabMetadata, MessageEndIsNotGenerationEndWhenReturnAndCallExist) {
  auto tokenizer = build(bpe_writer({"<|return|>", "<|call|>", "<|end|>"}));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_TRUE(tokenizer->is_eog(tokenizer->find_token("<|return|>")));
  EXPECT_TRUE(tokenizer->is_eog(tokenizer->find_token("<|call|>")));
  EXPECT_FALSE(tokenizer->is_eog(tokenizer->find_token("<|end|>")));
}

TEST(VocabMetadata, SentencePieceDefaultsAndOverrides) {
  gguf::Writer writer;
  ASSERT_TRUE(writer.set_string("tokenizer.ggml.model", "llama").ok());
  ASSERT_TRUE(writer.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "a"}).ok());
  ASSERT_TRUE(writer.set_array<int32_t>("tokenizer.ggml.token_type", {2, 3, 3, 1, 1}).ok());
  auto tokenizer = build(writer);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().message();
  EXPECT_TRUE(tokenizer->add_bos());
  EXPECT_TRUE(tokenizer->add_space_prefix());
  EXPECT_EQ(tokenizer->encode("a", true, false), (std::vector<TokenId>{1, 3}));
  // Characters without a token and without byte tokens become <unk>.
  EXPECT_EQ(tokenizer->encode("az", false, false), (std::vector<TokenId>{3, 0}));

  ASSERT_TRUE(writer.set_bool("tokenizer.ggml.add_space_prefix", false).ok());
  ASSERT_TRUE(writer.set_bool("tokenizer.ggml.add_eos_token", true).ok());
  tokenizer = build(writer);
  ASSERT_TRUE(tokenizer.ok());
  EXPECT_EQ(tokenizer->encode("a", true, false), (std::vector<TokenId>{1, 4, 2}));
}

}  // namespace
}  // namespace pagoda::tokenizer
