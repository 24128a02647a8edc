#pragma once
// Text <-> token ids for a GGUF model, matching llama.cpp's tokenizers token for token.
//
//   PAGODA_ASSIGN_OR_RETURN(auto reader, gguf::Reader::open(path));
//   PAGODA_ASSIGN_OR_RETURN(auto tokenizer, tokenizer::Tokenizer::from_gguf(reader));
//   std::vector<TokenId> ids = tokenizer.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
//   std::string text = tokenizer.decode(ids);
//
// Two vocabulary kinds (tokenizer.ggml.model): "llama" (SentencePiece-style, score-driven
// merges with byte fallback) and "gpt2" (byte-level BPE with the pre-tokenizer named by
// tokenizer.ggml.pre). A Tokenizer is immutable once built: share it freely between
// threads; copies are cheap and share the vocabulary.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gguf/reader.h"
#include "tokenizer/token_types.h"

namespace pagoda::tokenizer {

class Vocab;

// How token ids become text (the same rules for decode() and StreamingDetokenizer).
struct DecodeOptions {
  // Show control and unknown tokens (<s>, <|im_end|>, ...) instead of hiding them.
  bool special = false;
  // Control tokens shown as their text even when `special` is false: the markers a
  // grammar lets the model write ([TOOL_CALLS], <|python_tag|>), whose text the output
  // must hold for the grammar's bytes and the text to agree.
  std::vector<TokenId> shown_tokens = {};
  // SentencePiece: drop the leading space of the first token (the space the encoder put
  // before the text). Set false when decoding tokens that continue earlier text.
  bool strip_leading_space = true;
  // Where the vocabulary asks for it (most BPE vocabularies): " ," -> ",", " 's" -> "'s",
  // and the like, as Hugging Face's clean_up_tokenization_spaces.
  bool clean_spaces = true;
};

class Tokenizer {
 public:
  // Reads the vocabulary from tokenizer.ggml.* metadata. Errors: kUnsupported for a
  // tokenizer model other than llama/gpt2 or an unknown pre-tokenizer ("unknown
  // pre-tokenizer 'X'"), kCorruptFile / kNotFound for missing or inconsistent keys.
  static Expected<Tokenizer> from_gguf(const gguf::Reader& reader);

  // Token ids for `text`. add_special: BOS/EOS as the vocabulary asks (add_bos() /
  // add_eos()). parse_special: control tokens written in the text (e.g. "<|im_end|>")
  // become those tokens; otherwise they are tokenized as plain text. User-defined tokens
  // are always recognised. Any bytes are accepted; invalid UTF-8 is tokenized as the
  // reference does (byte fallback, or U+FFFD in byte-level BPE).
  std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The text of a token sequence. Ids outside the vocabulary contribute nothing. The
  // result may be invalid UTF-8 if the tokens split a character.
  std::string decode(std::span<const TokenId> tokens, const DecodeOptions& options = {}) const;

  // The text one token stands for: U+2581 shown as a space, byte tokens as their byte,
  // byte-level BPE tokens as their bytes; control/unknown tokens are empty unless
  // `special`. Empty for ids outside the vocabulary.
  std::string_view token_to_piece(TokenId id, bool special = false) const;

  int32_t n_vocab() const;
  VocabType type() const;
  const std::string& model_name() const;  // tokenizer.ggml.model
  const std::string& pre_name() const;    // tokenizer.ggml.pre ("" if absent)

  // The token's text as stored in the vocabulary ("▁the", "Ġthe", "<0x0A>"); empty for
  // ids outside it.
  std::string_view token_text(TokenId id) const;
  float token_score(TokenId id) const;
  uint32_t token_attributes(TokenId id) const;  // TokenAttr bits; 0 outside the vocabulary
  bool is_control(TokenId id) const;
  // The id whose vocabulary text is exactly `text`, or kNoToken.
  TokenId find_token(std::string_view text) const;

  // Special tokens; kNoToken where the vocabulary has none.
  TokenId bos() const;
  TokenId eos() const;
  TokenId eot() const;
  TokenId eom() const;
  TokenId unk() const;
  TokenId pad() const;
  TokenId sep() const;
  TokenId fim_prefix() const;
  TokenId fim_suffix() const;
  TokenId fim_middle() const;
  bool add_bos() const;
  bool add_eos() const;
  bool add_space_prefix() const;

  // End of generation: EOS, EOT, EOM and every token the vocabulary's texts mark as such
  // (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...).
  bool is_eog(TokenId id) const;
  const std::vector<TokenId>& eog_tokens() const;  // ascending

  const Vocab& vocab() const { return *vocab_; }

 private:
  explicit Tokenizer(std::shared_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {}
  std::shared_ptr<const Vocab> vocab_;
};

// Turns a stream of token ids into text as they come, for streaming responses. The
// concatenation of everything push() and finish() return equals decode() of all the
// tokens with the same options, whenever that decode is valid UTF-8. The output is
// always valid UTF-8: bytes of a character that is not complete yet are held back until
// the next token completes it; bytes that can never form a character come out as U+FFFD.
// Where spaces are cleaned, text within three characters of a space or apostrophe may
// also wait for the next token, until it is clear whether cleaning removes that space.
class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options = {});

  // The text that token completes (possibly empty).
  std::string push(TokenId token);
  // What is still held back, once no more tokens will come.
  std::string finish();

 private:
  std::string release(bool final);

  Tokenizer tokenizer_;  // shares the vocabulary
  DecodeOptions options_;
  bool first_token_ = true;
  bool clean_ = false;          // the vocabulary cleans spaces and the options allow it
  std::string pending_raw_;     // decoded text not cleaned yet
  std::string pending_utf8_;    // cleaned text not yet out (an incomplete character)
};

}  // namespace pagoda::tokenizer
