#include "tokenizer/vocabulary_match.h"

#include <string>

namespace pagoda::tokenizer {
namespace {

// A token's text for a message: quoted, with control bytes as \xNN.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

Status check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft) {
  if (target.n_vocab() != draft.n_vocab()) {
    return invalid_argument("the draft model's vocabulary has " + std::to_string(draft.n_vocab()) +
                            " tokens, the model's " + std::to_string(target.n_vocab()));
  }
  for (TokenId id = 0; id < target.n_vocab(); ++id) {
    if (target.token_text(id) != draft.token_text(id)) {
      return invalid_argument("the draft model's vocabulary differs from the model's at token " +
                              std::to_string(id) + ": " + quoted(draft.token_text(id)) +
                              " in the draft, " + quoted(target.token_text(id)) + " in the model");
    }
  }
  return {};
}

}  // namespace pagoda::tokenizer
