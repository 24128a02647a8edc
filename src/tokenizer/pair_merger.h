#pragma once
// The merge loop both tokenizer models share: a text split into one symbol per UTF-8
// character, kept as a doubly linked list; the adjacent pair with the best key merges
// first (on a tie the leftmost), until no pair has a key. SentencePiece keys a pair by
// its token's score, BPE by its negated merge rank. Internal to the tokenizer layer.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "core/unicode.h"

namespace pagoda::tokenizer {

template <typename Key>
class PairMerger {
 public:
  // A run of text[start, start + size); size 0 once merged into its left neighbour.
  struct Symbol {
    int prev;
    int next;
    size_t start;
    size_t size;
  };

  // Merges `text` and returns its symbols in text order (skip those of size 0).
  // key(left, right) -> std::optional<Key>: the pair's key, or nullopt when it cannot
  // merge. Symbols are adjacent in `text`, so left.data() + left.size() == right.data().
  // Storage is reused from call to call.
  template <typename KeyFn>
  const std::vector<Symbol>& merge(std::string_view text, KeyFn key) {
    symbols_.clear();
    for (size_t offset = 0; offset < text.size();) {
      const size_t size =
          std::min(utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + size == text.size() ? -1 : index + 1, offset, size});
      offset += size;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) queue_pair(text, i - 1, i, key);
    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) continue;
      left.size += right.size;
      right.size = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      queue_pair(text, left.prev, bigram.left, key);
      queue_pair(text, bigram.left, left.next, key);
    }
    return symbols_;
  }

 private:
  struct Bigram {
    int left;     // symbol index
    int right;    // symbol index
    Key key;      // higher merges first
    size_t size;  // bytes of the pair when it was queued (stale if either side changed since)
  };
  // Best key first; on a tie the leftmost pair.
  struct LowerPriority {
    bool operator()(const Bigram& a, const Bigram& b) const {
      return a.key < b.key || (a.key == b.key && a.left > b.left);
    }
  };

  template <typename KeyFn>
  void queue_pair(std::string_view text, int left, int right, KeyFn& key) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const std::optional<Key> k = key(text.substr(l.start, l.size), text.substr(r.start, r.size));
    if (k) queue_.push({left, right, *k, l.size + r.size});
  }

  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace pagoda::tokenizer
