#include "engine/grammar_vocab.h"

#include <string>
#include <vector>

namespace pagoda::engine {

std::shared_ptr<const grammar::VocabIndex> make_vocab_index(const tokenizer::Tokenizer& tokenizer,
                                                            std::span<const int32_t> text_tokens) {
  const int32_t n_vocab = tokenizer.n_vocab();
  std::vector<std::string> token_bytes(static_cast<size_t>(n_vocab));
  for (int32_t id = 0; id < n_vocab; ++id) {
    token_bytes[static_cast<size_t>(id)] = std::string(tokenizer.token_to_piece(id));
  }
  for (const int32_t id : text_tokens) {
    if (id < 0 || id >= n_vocab || tokenizer.is_eog(id)) continue;
    token_bytes[static_cast<size_t>(id)] = std::string(tokenizer.token_to_piece(id, /*special=*/true));
  }
  return grammar::VocabIndex::create(std::move(token_bytes), tokenizer.eog_tokens());
}

}  // namespace pagoda::engine
