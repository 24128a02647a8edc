#include <queue>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace pagoda::tokenizer {
namespace {

// A run of text[start, start + size) in a doubly linked list; size 0 once merged away.
struct Symbol {
  int prev;
  int next;
  size_t start;
  size_t size;
};

struct Bigram {
  int left;      // symbol index
  int right;     // symbol index
  float score;   // of the token the pair would become
  size_t size;   // bytes of the pair when it was queued (stale if either side changed since)
};

// Highest score first; on a tie the leftmost pair.
struct LowerPriority {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SentencePieceSession {
 public:
  SentencePieceSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void encode(std::vector<TokenId>& out) {
    for (size_t offset = 0; offset < text_.size();) {
      const size_t size = std::min(utf8_sequence_length(static_cast<uint8_t>(text_[offset])), text_.size() - offset);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + size == text_.size() ? -1 : index + 1, offset, size});
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
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i], out);
  }

 private:
  void queue_pair(int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols_[left].size + symbols_[right].size;
    const TokenId id = vocab_.find(text_.substr(symbols_[left].start, size));
    if (id == kNoToken) return;
    queue_.push({left, right, vocab_.score(id), size});
  }

  // A symbol that is no token is a single character (merged symbols are tokens by
  // construction), so it goes to byte fallback.
  void emit(const Symbol& symbol, std::vector<TokenId>& out) const {
    const std::string_view piece = text_.substr(symbol.start, symbol.size);
    const TokenId id = vocab_.find(piece);
    if (id != kNoToken) {
      out.push_back(id);
      return;
    }
    for (char byte : piece) {
      TokenId fallback = vocab_.fallback_token(static_cast<uint8_t>(byte));
      if (fallback == kNoToken) fallback = vocab_.special().unk;  // a vocabulary without byte tokens
      if (fallback != kNoToken) out.push_back(fallback);
    }
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
};

}  // namespace

void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  SentencePieceSession(vocab, text).encode(out);
}

}  // namespace pagoda::tokenizer
