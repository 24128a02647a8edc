// Word splits of the pre-tokenizers on strings that exercise digits, contractions,
// CJK, non-ASCII letters and whitespace, as the reference splits them (quirks included).

#include <gtest/gtest.h>

#include "core/unicode.h"
#include "tokenizer/pretokenizer.h"

namespace pagoda::tokenizer {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view pre_name, std::string_view text) {
  auto spec = find_pre_tokenizer_spec(pre_name);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  auto pre = PreTokenizer::create(*spec);
  EXPECT_TRUE(pre.ok()) << pre.status().message();
  const std::vector<uint32_t> cpts = decode_utf8(text);
  Pieces pieces;
  size_t begin = 0;
  for (size_t length : (*pre)->split_lengths(cpts)) {
    std::string piece;
    for (size_t i = begin; i < begin + length; ++i) append_utf8(piece, cpts[i]);
    pieces.push_back(piece);
    begin += length;
  }
  return pieces;
}

TEST(PreTokenizer, Gpt2SplitsContractionsAndLeavesOneSpaceForTheNextWord) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(split("gpt-2", "I'm  here\n\n"), (Pieces{"I", "'m", " ", " here", "\n\n"}));
  EXPECT_EQ(split("gpt-2", "I'M 42x"), (Pieces{"I", "'", "M", " 42", "x"}));  // case-sensitive contractions
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndNewlines) {
  EXPECT_EQ(split("llama-bpe", "1234567"), (Pieces{"123", "456", "7"}));
  EXPECT_EQ(split("llama-bpe", "  Hello\n\n world"), (Pieces{" ", " Hello", "\n\n", " world"}));
  EXPECT_EQ(split("llama-bpe", "I'M ok?!\n"), (Pieces{"I", "'M", " ok", "?!\n"}));
}

TEST(PreTokenizer, Qwen2TakesDigitsOneByOne) {
  EXPECT_EQ(split("qwen2", "abc123"), (Pieces{"abc", "1", "2", "3"}));
  EXPECT_EQ(split("qwen2", "a\u3000\u3000b"), (Pieces{"a", "\u3000", "\u3000b"}));
}

TEST(PreTokenizer, DeepseekCoderRunsItsRegexesInOrder) {
  EXPECT_EQ(split("deepseek-coder", "Hello, 世界123"), (Pieces{"Hello", ",", " ", "世界", "1", "2", "3"}));
}

TEST(PreTokenizer, FalconCutsThreeDigitGroupsLast) {
  EXPECT_EQ(split("falcon", "Hello, world!! 12345"), (Pieces{"Hello", ",", " world", "!!", " ", "123", "45"}));
}

TEST(PreTokenizer, DefaultSplitsPunctuationFirst) {
  EXPECT_EQ(split("", "Hello,world 1234"), (Pieces{"Hello", ",", "world", " ", "123", "4"}));
}

TEST(PreTokenizer, SmollmIsolatesEveryDigit) {
  EXPECT_EQ(split("smollm", "2024年 x"), (Pieces{"2", "0", "2", "4", "年", " x"}));
}

TEST(PreTokenizer, TekkenSplitsCamelCase) {
  EXPECT_EQ(split("tekken", "HelloWorld test"), (Pieces{"Hello", "World", " test"}));
}

TEST(PreTokenizer, NonAsciiLettersCountAsBothCases) {
  // The reference collapses every non-ASCII letter to one class, so É is "lowercase" too.
  EXPECT_EQ(split("gpt-4o", "ÉCOLE école"), (Pieces{"É", "COLE", " école"}));
}

TEST(PreTokenizer, BloomStopsAtSentencePunctuation) {
  EXPECT_EQ(split("bloom", "Hello, world. 你好。"), (Pieces{"Hello", ",", " world", ".", " 你好", "。"}));
}

TEST(PreTokenizer, SuperBpeGroupsThousandsWithEmptyMatches) {
  EXPECT_EQ(split("superbpe", "x 1234567"), (Pieces{"x ", "1", "234", "567"}));
}

TEST(PreTokenizer, DeepseekLlmKeepsNewlinesApart) {
  EXPECT_EQ(split("deepseek-llm", "Hello world\n"), (Pieces{"Hello", " world", "\n"}));
}

TEST(PreTokenizer, KimiK2KeepsHanRunsAndContractions) {
  EXPECT_EQ(split("kimi-k2", "你好world's 123"), (Pieces{"你好", "world's", " ", "123"}));
}

TEST(PreTokenizer, ChameleonSplitsSentinelsFurther) {
  EXPECT_EQ(split("chameleon", "<sentinel:12>abc"), (Pieces{"<", "sentinel", ":", "1", "2", ">", "abc"}));
}

TEST(PreTokenizer, AfmoeGroupsDigitsFromTheRight) {
  EXPECT_EQ(split("afmoe", "ab12345"), (Pieces{"ab", "12", "345"}));
}

TEST(PreTokenizer, InvalidUtf8ReadsAsReplacementCharacters) {
  EXPECT_EQ(split("gpt-2", "a\xFF\xC3"), (Pieces{"a", "\uFFFD\uFFFD"}));
  EXPECT_EQ(split("qwen2", std::string("x\0y", 3)), (Pieces{"x", std::string("\0y", 2)}));  // NUL may lead a word
}

TEST(PreTokenizer, EveryNamedPreTokenizerCompiles) {
  for (std::string_view name :
       {"default", "llama3", "llama-bpe", "dbrx", "smaug-bpe", "jais-2", "deepseek-llm", "deepseek-coder",
        "deepseek-v3", "hunyuan-dense", "spark2_5", "youtu", "falcon", "starcoder", "refact", "command-r",
        "smollm", "codeshell", "exaone", "minerva-7b", "mellum2", "gpt-2", "phi-2", "mpt", "olmo", "jais",
        "qwen2", "qwen35", "stablelm2", "poro-chat", "bloom", "gpt3-finnish", "chatglm-bpe", "viking", "tekken",
        "chameleon", "gpt-4o", "granite-embed-multi-97m", "tiny_aya", "kimi-k2", "superbpe", "bailingmoe",
        "seed-coder", "ufakzeka", "grok-2", "afmoe", "laguna", "exaone-moe", "minicpm5", "gemma4",
        "sarvam-moe", "whitespace", "trillion", "granite-docling", "minimax-m2", "solar-open", "exaone4"}) {
    auto spec = find_pre_tokenizer_spec(name);
    ASSERT_TRUE(spec.ok()) << name;
    auto pre = PreTokenizer::create(*spec);
    ASSERT_TRUE(pre.ok()) << name << ": " << pre.status().message();
    EXPECT_FALSE((*pre)->split("Hello, 世界 123 🦙\n\t x").empty()) << name;
  }
}

TEST(PreTokenizer, UnknownNameIsAnError) {
  auto spec = find_pre_tokenizer_spec("no-such-pre");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(spec.status().message(), "unknown pre-tokenizer 'no-such-pre'");
}

}  // namespace
}  // namespace pagoda::tokenizer
