#pragma once
// The vocabulary of a model, read from the tokenizer.ggml.* metadata of a GGUF file:
// token texts, scores and attributes, BPE merge ranks, special token ids, the flags
// that steer encoding and decoding, and the end-of-generation set. Internal to the
// tokenizer layer; callers use tokenizer.h.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "gguf/reader.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/token_types.h"

namespace pagoda::tokenizer {

// Special token ids; kNoToken where the vocabulary has none.
struct SpecialTokenIds {
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId eot = kNoToken;  // end of turn
  TokenId eom = kNoToken;  // end of message (tool calls)
  TokenId unk = kNoToken;
  TokenId sep = kNoToken;
  TokenId pad = kNoToken;
  TokenId mask = kNoToken;
  TokenId fim_pre = kNoToken;
  TokenId fim_suf = kNoToken;
  TokenId fim_mid = kNoToken;
  TokenId fim_pad = kNoToken;
  TokenId fim_rep = kNoToken;
  TokenId fim_sep = kNoToken;
};

// Flags that steer encoding and decoding: each model type's default, then the
// pre-tokenizer's adjustments, then the file's own keys.
struct VocabFlags {
  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;      // SentencePiece: a space before the first word
  bool remove_extra_whitespaces = false;
  bool ignore_merges = false;         // BPE: a word that is a token stays whole
  bool clean_spaces = false;          // decode: " ," -> ",", " 's" -> "'s", ...
  bool escape_whitespaces = true;     // ' ' <-> U+2581 (SentencePiece style)
};

struct StringPairHash {
  size_t operator()(const std::pair<std::string_view, std::string_view>& p) const {
    const size_t a = std::hash<std::string_view>{}(p.first);
    return a ^ (std::hash<std::string_view>{}(p.second) + 0x9E3779B97F4A7C15ULL + (a << 6) + (a >> 2));
  }
};

class Vocab {
 public:
  // Reads and validates the vocabulary; errors name the key or the token at fault.
  static Expected<std::unique_ptr<Vocab>> from_gguf(const gguf::Reader& reader);

  Vocab(const Vocab&) = delete;  // the lookup maps hold views into the token strings
  Vocab& operator=(const Vocab&) = delete;

  VocabType type() const { return type_; }
  const std::string& model_name() const { return model_name_; }
  const std::string& pre_name() const { return pre_name_; }
  const PreTokenizer& pre_tokenizer() const { return *pre_tokenizer_; }
  const VocabFlags& flags() const { return flags_; }
  const SpecialTokenIds& special() const { return special_; }

  int32_t size() const { return static_cast<int32_t>(texts_.size()); }
  bool contains(TokenId id) const { return id >= 0 && id < size(); }
  const std::string& text(TokenId id) const { return texts_[id]; }
  float score(TokenId id) const { return scores_[id]; }
  uint32_t attributes(TokenId id) const { return attrs_[id]; }
  bool has_attribute(TokenId id, TokenAttr attr) const { return (attrs_[id] & attr) != 0; }
  bool is_eog(TokenId id) const { return contains(id) && is_eog_[id]; }
  const std::vector<TokenId>& eog_tokens() const { return eog_list_; }

  // The id of the token whose text is exactly `text`, or kNoToken.
  TokenId find(std::string_view text) const;
  // BPE: the rank of merging `left` with `right` (lower merges first), or -1.
  int merge_rank(std::string_view left, std::string_view right) const;
  // The token that stands for one byte of a merged symbol that is itself no token:
  // SentencePiece's <0xXX> (else the byte as a one-character token); in BPE the
  // one-byte token of the (byte-encoded) text, or <0xXX> where bytes are not encoded.
  // kNoToken when the vocabulary has none (the byte is then dropped).
  TokenId fallback_token(uint8_t byte) const { return fallback_tokens_[byte]; }
  // Control, user-defined and unknown tokens, longest text first: the order in which
  // special tokens are cut out of the text.
  const std::vector<TokenId>& special_tokens_by_length() const { return special_by_length_; }
  // The text a token stands for with special tokens shown (see detokenizer.h).
  const std::string& piece(TokenId id) const { return pieces_[id]; }

 private:
  Vocab() = default;
  friend class VocabLoader;

  VocabType type_ = VocabType::kSentencePiece;
  std::string model_name_;  // tokenizer.ggml.model
  std::string pre_name_;    // tokenizer.ggml.pre
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  VocabFlags flags_;
  SpecialTokenIds special_;

  std::vector<std::string> texts_;  // [n_vocab]
  std::vector<float> scores_;       // [n_vocab]
  std::vector<uint32_t> attrs_;     // [n_vocab] TokenAttr bits
  std::vector<std::string> pieces_; // [n_vocab] decoded text, special tokens shown
  std::vector<bool> is_eog_;        // [n_vocab]
  std::vector<TokenId> eog_list_;   // ascending
  std::vector<TokenId> special_by_length_;
  TokenId fallback_tokens_[256];

  std::unordered_map<std::string_view, TokenId> token_ids_;  // views into texts_
  std::vector<std::string> merge_storage_;                   // "left right" as stored
  std::unordered_map<std::pair<std::string_view, std::string_view>, int, StringPairHash> merge_ranks_;
};

}  // namespace pagoda::tokenizer
