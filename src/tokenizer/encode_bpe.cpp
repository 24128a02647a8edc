#include <algorithm>
#include <queue>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace pagoda::tokenizer {
namespace {

// A run of word[start, start + size) in a doubly linked list; size 0 once merged away.
struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t size;
};

struct Bigram {
  int left;     // symbol index
  int right;    // symbol index
  int rank;     // merge rank (lower merges first)
  size_t size;  // bytes of the pair when it was queued (stale if either side changed since)
};

// Lowest rank first; on a tie the leftmost pair.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

class BpeSession {
 public:
  explicit BpeSession(const Vocab& vocab) : vocab_(vocab) {}

  void encode_word(std::string_view word, std::vector<TokenId>& out) {
    if (keeps_whole(word)) {
      out.push_back(vocab_.find(word));
      return;
    }
    word_ = word;
    symbols_.clear();
    for (size_t offset = 0; offset < word.size();) {
      const size_t size = std::min(utf8_sequence_length(static_cast<uint8_t>(word[offset])), word.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + size == word.size() ? -1 : index + 1, offset, size});
      offset += size;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) queue_pair(i - 1, i);
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
      queue_pair(left.prev, bigram.left);
      queue_pair(bigram.left, left.next);
    }
    for (const Symbol& symbol : symbols_) {
      if (symbol.size > 0) emit(word.substr(symbol.start, symbol.size), out);
    }
  }

 private:
  // Words that are tokens skip merging where the vocabulary says so; Gemma-4-style
  // vocabularies keep runs of newlines that are tokens whole.
  bool keeps_whole(std::string_view word) const {
    if (vocab_.flags().ignore_merges && vocab_.find(word) != kNoToken) return true;
    if (vocab_.pre_tokenizer().keeps_newline_runs() && word.find_first_not_of('\n') == std::string_view::npos) {
      return vocab_.find(word) != kNoToken;
    }
    return false;
  }

  void queue_pair(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const int rank = vocab_.merge_rank(word_.substr(l.start, l.size), word_.substr(r.start, r.size));
    if (rank < 0) return;
    queue_.push({left, right, rank, l.size + r.size});
  }

  // A merged symbol that is no token (a merge list naming pairs the vocabulary lacks)
  // falls back byte by byte.
  void emit(std::string_view piece, std::vector<TokenId>& out) const {
    const TokenId id = vocab_.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      return;
    }
    for (char byte : piece) {
      const TokenId fallback = vocab_.fallback_token(static_cast<uint8_t>(byte));
      if (fallback != kNoToken) out.push_back(fallback);
    }
  }

  const Vocab& vocab_;
  std::string_view word_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void encode_bpe(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  BpeSession session(vocab);
  for (const std::string& word : vocab.pre_tokenizer().split(text)) session.encode_word(word, out);
}

}  // namespace pagoda::tokenizer
