#pragma once
// Cutting special tokens out of the text before ordinary tokenization. Internal.

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

// A special token, or a run of ordinary text: text.substr(offset, length).
struct Fragment {
  TokenId token = kNoToken;  // kNoToken for text
  size_t offset = 0;
  size_t length = 0;

  bool is_text() const { return token == kNoToken; }
};

// Splits `text` at every occurrence of a special token, longest token first: user-defined
// tokens always, control and unknown tokens only with `parse_special`. Tokens marked
// lstrip/rstrip swallow the whitespace before/after them. Empty text gives no fragments.
std::vector<Fragment> split_special_tokens(const Vocab& vocab, std::string_view text, bool parse_special);

}  // namespace pagoda::tokenizer
