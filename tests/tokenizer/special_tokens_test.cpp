// Special tokens in text (parsed or not), BOS/EOS, strip rules, end-of-generation sets.

#include <gtest/gtest.h>

#include <algorithm>

#include "tokenizer/tokenizer_test_util.h"

namespace pagoda::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::vocab_path;

TEST(SpecialTokens, LlamaBosAndEos) {
  const Tokenizer spm = load_tokenizer(vocab_path("llama-spm"));
  EXPECT_EQ(spm.encode("Hello world", true, false), (std::vector<TokenId>{1, 15043, 3186}));
  EXPECT_EQ(spm.encode("Hello world", false, false), (std::vector<TokenId>{15043, 3186}));
  EXPECT_EQ(spm.encode("", true, false), std::vector<TokenId>{1});
  EXPECT_TRUE(spm.encode("", false, false).empty());
}

TEST(SpecialTokens, ControlTokensAreParsedOnlyWhenAsked) {
  const Tokenizer spm = load_tokenizer(vocab_path("llama-spm"));
  const TokenId hello = spm.find_token("\xE2\x96\x81Hello");
  // A special token is followed by text that gets the space prefix again.
  EXPECT_EQ(spm.encode("<s>Hello</s>", false, true), (std::vector<TokenId>{1, hello, 2}));
  const auto plain = spm.encode("<s>Hello</s>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 2), 0);
  EXPECT_EQ(spm.decode(plain), "<s>Hello</s>");

  const Tokenizer gpt2 = load_tokenizer(vocab_path("gpt-2"));
  EXPECT_EQ(gpt2.encode("Hello<|endoftext|>", false, true), (std::vector<TokenId>{15496, 50256}));
  EXPECT_EQ(gpt2.encode("Hello<|endoftext|>", false, false),
            (std::vector<TokenId>{15496, 27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(gpt2.decode(std::vector<TokenId>{15496, 50256}), "Hello");
  EXPECT_EQ(gpt2.decode(std::vector<TokenId>{15496, 50256}, {.special = true}), "Hello<|endoftext|>");
}

TEST(SpecialTokens, ShownTokensAreTheOnlyControlTokensShown) {
  const Tokenizer gpt2 = load_tokenizer(vocab_path("gpt-2"));
  const std::vector<TokenId> ids = {50256, 15496, 50256};
  DecodeOptions options;
  options.shown_tokens = {50256};
  EXPECT_EQ(gpt2.decode(ids, options), "<|endoftext|>Hello<|endoftext|>");
  StreamingDetokenizer stream(gpt2, options);
  std::string streamed;
  for (const TokenId id : ids) streamed += stream.push(id);
  EXPECT_EQ(streamed + stream.finish(), "<|endoftext|>Hello<|endoftext|>");

  const Tokenizer spm = load_tokenizer(vocab_path("llama-spm"));
  const TokenId hello = spm.find_token("\xE2\x96\x81Hello");
  options.shown_tokens = {2};  // </s> shown, <s> not
  EXPECT_EQ(spm.decode(std::vector<TokenId>{1, hello, 2}, options), " Hello</s>");
}

TEST(SpecialTokens, LongestSpecialTokenIsCutFirst) {
  const Tokenizer starcoder = load_tokenizer(vocab_path("starcoder"));
  const TokenId prefix = starcoder.find_token("<fim_prefix>");
  const TokenId middle = starcoder.find_token("<fim_middle>");
  ASSERT_NE(prefix, kNoToken);
  EXPECT_EQ(starcoder.fim_prefix(), prefix);
  EXPECT_EQ(starcoder.fim_middle(), middle);
  const auto ids = starcoder.encode("<fim_prefix>x<fim_middle>", false, true);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], prefix);
  EXPECT_EQ(ids[2], middle);
}

TEST(SpecialTokens, Phi3SpecialTokensSwallowTheWhitespaceAfterThem) {
  const Tokenizer phi3 = load_tokenizer(vocab_path("phi-3"));
  const TokenId user = phi3.find_token("<|user|>");
  const TokenId end = phi3.find_token("<|end|>");
  const TokenId assistant = phi3.find_token("<|assistant|>");
  const TokenId hi = phi3.find_token("\xE2\x96\x81Hi");
  ASSERT_NE(hi, kNoToken);
  EXPECT_EQ(phi3.encode("<|user|>\nHi<|end|>\n<|assistant|>", false, true),
            (std::vector<TokenId>{user, hi, end, assistant}));
  EXPECT_EQ(phi3.eos(), 32000);
  EXPECT_TRUE(phi3.is_eog(32000));  // <|endoftext|>
  EXPECT_TRUE(phi3.is_eog(end));
  EXPECT_TRUE(phi3.is_eog(2));      // </s>
  EXPECT_FALSE(phi3.is_eog(assistant));
}

TEST(SpecialTokens, EndOfGenerationSetsByText) {
  const Tokenizer starcoder = load_tokenizer(vocab_path("starcoder"));
  EXPECT_TRUE(starcoder.is_eog(0));                                  // <|endoftext|>, also EOS
  EXPECT_TRUE(starcoder.is_eog(starcoder.find_token("<fim_pad>")));  // FIM padding ends generation
  EXPECT_FALSE(starcoder.is_eog(starcoder.find_token("<fim_prefix>")));
  const Tokenizer falcon = load_tokenizer(vocab_path("falcon"));
  EXPECT_EQ(falcon.eos(), 11);
  EXPECT_TRUE(falcon.is_eog(11));
}

TEST(SpecialTokens, SentencePieceLeadingSpace) {
  const Tokenizer spm = load_tokenizer(vocab_path("llama-spm"));
  const auto ids = spm.encode(" Hello", false, false);
  EXPECT_EQ(spm.decode(ids), " Hello");
  EXPECT_EQ(spm.decode(spm.encode("Hello", false, false)), "Hello");
  EXPECT_EQ(spm.decode(spm.encode("Hello", false, false), {.strip_leading_space = false}), " Hello");
  // With BOS first, the reference keeps the space of the word after it.
  EXPECT_EQ(spm.decode(spm.encode("Hello", true, false)), " Hello");
}

}  // namespace
}  // namespace pagoda::tokenizer
