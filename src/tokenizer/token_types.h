#pragma once
// Token ids, vocabulary kinds and token attributes, shared by the tokenizer's parts.

#include <cstdint>

namespace pagoda::tokenizer {

using TokenId = int32_t;
constexpr TokenId kNoToken = -1;

enum class VocabType {
  kSentencePiece,     // tokenizer.ggml.model "llama": score-driven merges, byte fallback
  kBytePairEncoding,  // tokenizer.ggml.model "gpt2": ranked merges over pre-tokenized words
};

// tokenizer.ggml.token_type values as files store them.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Per-token attribute bits, derived from the token type and a few fixes by token text.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrNormalized = 1u << 6,
  kAttrLstrip = 1u << 7,  // swallow whitespace before the special token
  kAttrRstrip = 1u << 8,  // swallow whitespace after it
  kAttrSingleWord = 1u << 9,
};

}  // namespace pagoda::tokenizer
