#pragma once
// The vocabulary as the grammar matcher sees it, built once per tokenizer and shared by
// every compiled grammar: each token's exact bytes, and the matchable tokens (non-empty
// bytes, not a stop token) sorted by bytes with the length of the prefix each shares
// with the one before it, so that walking them in order is a depth-first walk of the
// token trie and checking all tokens against a state shares their prefixes.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::grammar {

// uint32 words of a token bitmask for a vocabulary of n_vocab tokens.
inline size_t bitmask_words(int32_t n_vocab) { return n_vocab <= 0 ? 0 : (static_cast<size_t>(n_vocab) + 31) / 32; }

class VocabIndex {
 public:
  // token_bytes[id]: the bytes token `id` adds to the output (empty for control and
  // special tokens: the grammar never allows them). stop_token_ids: the tokens that end
  // generation, allowed exactly when the grammar can terminate (their bytes are
  // ignored); ids outside [0, n_vocab) are dropped.
  static std::shared_ptr<const VocabIndex> create(std::vector<std::string> token_bytes,
                                                  std::vector<int32_t> stop_token_ids);

  int32_t n_vocab() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view token_bytes(int32_t id) const {
    return std::string_view(bytes_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }
  bool is_stop_token(int32_t id) const;
  const std::vector<int32_t>& stop_token_ids() const { return stop_ids_; }  // ascending

  // The matchable tokens in byte order (ties by id).
  const std::vector<int32_t>& sorted_tokens() const { return sorted_; }
  // sorted_lcp()[i]: bytes token sorted_tokens()[i] shares with sorted_tokens()[i-1] (0 for i = 0).
  const std::vector<int32_t>& sorted_lcp() const { return lcp_; }
  std::string_view sorted_bytes(int32_t i) const { return token_bytes(sorted_[i]); }
  // The first sorted index after i whose token does not start with the first k bytes of
  // sorted token i (the end of that prefix's subtree in the trie).
  int32_t prefix_end(int32_t i, size_t k) const;
  // The longest matchable token, in bytes.
  int32_t max_token_length() const { return max_len_; }

  // Bitmask (bitmask_words(n_vocab()) words) of the matchable tokens.
  const std::vector<uint32_t>& matchable_mask() const { return matchable_mask_; }

 private:
  VocabIndex() = default;

  std::string bytes_;              // every token's bytes, concatenated
  std::vector<uint32_t> offsets_{0};  // token id -> start in bytes_; n_vocab + 1 entries
  std::vector<int32_t> stop_ids_;
  std::vector<uint32_t> stop_mask_;
  std::vector<int32_t> sorted_;
  std::vector<int32_t> lcp_;
  std::vector<uint32_t> matchable_mask_;
  int32_t max_len_ = 0;
};

}  // namespace pagoda::grammar
