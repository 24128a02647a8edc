#include <optional>

#include "tokenizer/encoders.h"
#include "tokenizer/pair_merger.h"

namespace pagoda::tokenizer {
namespace {

class BpeSession {
 public:
  explicit BpeSession(const Vocab& vocab) : vocab_(vocab) {}

  void encode_word(std::string_view word, std::vector<TokenId>& out) {
    if (keeps_whole(word)) {
      out.push_back(vocab_.find(word));
      return;
    }
    // Key: the negated merge rank, so the lowest rank merges first.
    const auto negated_rank = [this](std::string_view left, std::string_view right) -> std::optional<int> {
      const int rank = vocab_.merge_rank(left, right);
      return rank < 0 ? std::nullopt : std::optional<int>(-rank);
    };
    for (const auto& symbol : merger_.merge(word, negated_rank)) {
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
  PairMerger<int> merger_;  // reused across words
};

}  // namespace

void encode_bpe(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  BpeSession session(vocab);
  for (const std::string& word : vocab.pre_tokenizer().split(text)) session.encode_word(word, out);
}

}  // namespace pagoda::tokenizer
