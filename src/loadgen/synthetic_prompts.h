#pragma once
// Synthetic prompts of a given length in tokens, for servers of any tokenizer: random
// sequences of common English words (seeded, so runs repeat). How many tokens a word
// takes is measured once, by tokenizing the whole word list through the server's
// /tokenize when it has one; without it each word counts as one token, which common
// words are in the byte-level BPE and SentencePiece vocabularies of current models.
// Prompts differ from their first word, so a prefix cache cannot share them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/bench_prompt.h"

namespace pagoda::loadgen {

// The words prompts are made of, each a common English word.
std::span<const std::string_view> prompt_words();

// The word list as one text ("w1 w2 ... wN"), the text to tokenize for calibration.
std::string word_list_text();

struct WordTokenRate {
  double tokens_per_word = 1.0;
  TokenCountSource source = TokenCountSource::kEstimate;
};

// The rate measured from the token count of word_list_text().
WordTokenRate measured_word_token_rate(int32_t word_list_tokens);

// `count` prompts of about `prompt_tokens` tokens each (exactly, when every word is
// one token), each asking for `max_tokens` tokens.
std::vector<BenchPrompt> synthetic_prompts(size_t count, int32_t prompt_tokens, int32_t max_tokens,
                                           const WordTokenRate& rate, uint64_t seed);

}  // namespace pagoda::loadgen
