#pragma once
// Builds a Vocab from GGUF metadata (vocab.cpp) and derives what the reference derives
// from token texts: end-of-turn and fill-in-the-middle tokens, the end-of-generation
// set, unused tokens, per-model strip rules, the special-token order and the decoded
// pieces (vocab_special.cpp). Internal to the tokenizer layer.

#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

class VocabLoader {
 public:
  VocabLoader(const gguf::Reader& reader, Vocab& vocab) : reader_(reader), vocab_(vocab) {}

  Status load();

 private:
  // vocab.cpp
  Status read_model_type(PreTokenizerSpec& spec);
  Status read_merges();
  Status read_tokens();
  Status read_special_ids();
  Status read_add_flags();

  // vocab_special.cpp
  void detect_special_by_text();
  void mark_unused();
  void build_eog_set();
  void build_special_order();
  void build_fallback_tokens();
  void build_pieces();
  void apply_model_strip_rules();

  void force_control(TokenId id);

  const gguf::Reader& reader_;
  Vocab& vocab_;
};

}  // namespace pagoda::tokenizer
