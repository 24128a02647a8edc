#pragma once
// The two merge algorithms. Each appends the tokens of one piece of ordinary text (no
// special tokens in it) to `out`. Internal to the tokenizer layer.

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

// SentencePiece: `text` is already space-escaped (' ' -> U+2581). Starting from single
// characters, the adjacent pair whose concatenation is the highest-scoring token merges
// first; what never becomes a token falls back to byte tokens.
void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

// Byte-level BPE: the pre-tokenizer splits `text` into words; within each word, the
// adjacent pair with the lowest merge rank merges first.
void encode_bpe(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

}  // namespace pagoda::tokenizer
