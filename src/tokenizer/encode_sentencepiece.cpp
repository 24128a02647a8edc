#include <optional>

#include "tokenizer/encoders.h"
#include "tokenizer/pair_merger.h"

namespace pagoda::tokenizer {
namespace {

class SentencePieceSession {
 public:
  SentencePieceSession(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void encode(std::vector<TokenId>& out) {
    // Key: the score of the token the pair would become.
    const auto score = [this](std::string_view left, std::string_view right) -> std::optional<float> {
      const TokenId id = vocab_.find(std::string_view(left.data(), left.size() + right.size()));
      return id == kNoToken ? std::nullopt : std::optional<float>(vocab_.score(id));
    };
    PairMerger<float> merger;
    for (const auto& symbol : merger.merge(text_, score)) {
      if (symbol.size > 0) emit(text_.substr(symbol.start, symbol.size), out);
    }
  }

 private:
  // A symbol that is no token is a single character (merged symbols are tokens by
  // construction), so it goes to byte fallback.
  void emit(std::string_view piece, std::vector<TokenId>& out) const {
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
};

}  // namespace

void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
  SentencePieceSession(vocab, text).encode(out);
}

}  // namespace pagoda::tokenizer
