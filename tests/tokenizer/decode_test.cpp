// Decoding: round trips, space cleaning, and the streaming detokenizer's UTF-8 handling.

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer_test_util.h"

namespace pagoda::tokenizer {
namespace {

using testing::load_tokenizer;
using testing::read_vectors;
using testing::vocab_path;

// decode(encode(s)) == s, except where the vocabulary cleans spaces and s has a pattern
// that cleaning changes.
TEST(Decode, RoundTripsTheReferenceStrings) {
  for (const std::string name : {"llama-spm", "phi-3", "gpt-2", "starcoder", "falcon"}) {
    const Tokenizer tokenizer = load_tokenizer(vocab_path(name));
    for (const auto& vector : read_vectors(vocab_path(name))) {
      std::string cleaned = vector.text;
      clean_up_spaces(cleaned);
      const bool cleaning_changes_it = cleaned != vector.text && name != "llama-spm" && name != "phi-3";
      const std::string expected = cleaning_changes_it ? cleaned : vector.text;
      EXPECT_EQ(tokenizer.decode(tokenizer.encode(vector.text, false, false)), expected) << name << ": " << vector.text;
      EXPECT_EQ(tokenizer.decode(tokenizer.encode(vector.text, false, false), {.clean_spaces = false}), vector.text);
    }
  }
}

TEST(Decode, CleanUpSpaces) {
  const auto clean = [](std::string s) {
    clean_up_spaces(s);
    return s;
  };
  EXPECT_EQ(clean("Hello , world !"), "Hello, world!");
  EXPECT_EQ(clean("it ' s"), "it's");
  EXPECT_EQ(clean("we 're here , you 've seen"), "we're here, you've seen");
  EXPECT_EQ(clean("I 'm sure it 's fine"), "I'm sure it's fine");
  EXPECT_EQ(clean("don 't , I 'll , he 'd"), "don 't, I 'll, he 'd");
  EXPECT_EQ(clean("a ' ' b"), "a'' b");
  EXPECT_EQ(clean(" ?"), "?");
  EXPECT_EQ(clean(""), "");
}

TEST(Decode, BpeCleansSpacesLikeTheReference) {
  const Tokenizer gpt2 = load_tokenizer(vocab_path("gpt-2"));
  const auto ids = gpt2.encode("Hello , world ! I 'm here", false, false);
  EXPECT_EQ(gpt2.decode(ids), "Hello, world! I'm here");
  EXPECT_EQ(testing::stream_decode(gpt2, ids), "Hello, world! I'm here");
}

TEST(StreamingDetokenizer, HoldsBackIncompleteCharacters) {
  const Tokenizer spm = load_tokenizer(vocab_path("llama-spm"));
  const TokenId byte_c3 = 3 + 0xC3, byte_a9 = 3 + 0xA9;  // <0xC3> <0xA9>: "é"
  StreamingDetokenizer stream(spm);
  EXPECT_EQ(stream.push(byte_c3), "");
  EXPECT_EQ(stream.push(byte_a9), "\xC3\xA9");
  EXPECT_EQ(stream.finish(), "");

  StreamingDetokenizer truncated(spm);
  EXPECT_EQ(truncated.push(3 + 0xE2), "");
  EXPECT_EQ(truncated.push(3 + 0x96), "");
  EXPECT_EQ(truncated.finish(), "\xEF\xBF\xBD");  // never completed: U+FFFD

  StreamingDetokenizer invalid(spm);
  EXPECT_EQ(invalid.push(3 + 0xFF), "\xEF\xBF\xBD");
  EXPECT_EQ(invalid.push(3 + 'a'), "a");
}

TEST(StreamingDetokenizer, WaitsForTheTokenAfterASpaceWhenCleaning) {
  const Tokenizer gpt2 = load_tokenizer(vocab_path("gpt-2"));
  StreamingDetokenizer stream(gpt2);
  EXPECT_EQ(stream.push(gpt2.find_token("Hello")), "Hello");
  EXPECT_EQ(stream.push(gpt2.find_token("\xC4\xA0")), "");  // "Ġ": a lone space may yet be cleaned
  // Text within three characters of a space stays back until it cannot be cleaned any more.
  EXPECT_EQ(stream.push(gpt2.find_token(",")), "");
  EXPECT_EQ(stream.push(gpt2.find_token("\xC4\xA0world")), ", world");
  EXPECT_EQ(stream.finish(), "");
}

// Random token sequences: the stream is valid UTF-8 and, when decode() is, equal to it.
TEST(StreamingDetokenizer, MatchesDecodeOnRandomTokens) {
  for (const std::string name : {"llama-spm", "gpt-2"}) {
    const Tokenizer tokenizer = load_tokenizer(vocab_path(name));
    std::mt19937 rng(1234);
    std::uniform_int_distribution<TokenId> any_token(0, tokenizer.n_vocab() - 1);
    std::uniform_int_distribution<int> length(1, 24);
    for (int round = 0; round < 300; ++round) {
      std::vector<TokenId> ids(static_cast<size_t>(length(rng)));
      for (TokenId& id : ids) id = any_token(rng);
      const std::string whole = tokenizer.decode(ids);
      const std::string streamed = testing::stream_decode(tokenizer, ids);
      EXPECT_TRUE(testing::is_valid_utf8(streamed));
      if (testing::is_valid_utf8(whole)) {
        EXPECT_EQ(streamed, whole) << name << " round " << round;
      }
    }
  }
}

TEST(Decode, IdsOutsideTheVocabularyAreIgnored) {
  const Tokenizer gpt2 = load_tokenizer(vocab_path("gpt-2"));
  EXPECT_EQ(gpt2.decode(std::vector<TokenId>{15496, -5, 1 << 30, 995}), "Hello world");
  EXPECT_EQ(gpt2.token_to_piece(-1), "");
  StreamingDetokenizer stream(gpt2);
  EXPECT_EQ(stream.push(99999999), "");
}

}  // namespace
}  // namespace pagoda::tokenizer
