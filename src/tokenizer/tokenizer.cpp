#include "tokenizer/tokenizer.h"

#include "tokenizer/encoders.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {
namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out += kEscapedSpace;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_gguf(const gguf::Reader& reader) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Vocab> vocab, Vocab::from_gguf(reader));
  return Tokenizer(std::shared_ptr<const Vocab>(std::move(vocab)));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Vocab& vocab = *vocab_;
  const VocabFlags& flags = vocab.flags();
  const bool spm = vocab.type() == VocabType::kSentencePiece;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && flags.add_bos) out.push_back(vocab.special().bos);
  // SentencePiece puts a space before text that starts the input or follows a special
  // token, as the original tokenizer does before its first word.
  bool after_special = true;
  for (const Fragment& fragment : split_special_tokens(vocab, text, parse_special)) {
    if (!fragment.is_text()) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    const std::string_view piece = text.substr(fragment.offset, fragment.length);
    if (spm) {
      std::string prefixed = flags.add_space_prefix && after_special ? " " : "";
      prefixed += piece;
      encode_sentencepiece(vocab, escape_spaces(prefixed), out);
    } else if (flags.escape_whitespaces) {
      encode_bpe(vocab, escape_spaces(piece), out);
    } else {
      encode_bpe(vocab, piece, out);
    }
    after_special = false;
  }
  if (add_special && flags.add_eos) out.push_back(vocab.special().eos);
  return out;
}

std::string_view Tokenizer::token_to_piece(TokenId id, bool special) const {
  if (!vocab_->contains(id)) return {};
  if (!special && (vocab_->attributes(id) & (kAttrUnknown | kAttrControl))) return {};
  return vocab_->piece(id);
}

int32_t Tokenizer::n_vocab() const { return vocab_->size(); }
VocabType Tokenizer::type() const { return vocab_->type(); }
const std::string& Tokenizer::model_name() const { return vocab_->model_name(); }
const std::string& Tokenizer::pre_name() const { return vocab_->pre_name(); }

std::string_view Tokenizer::token_text(TokenId id) const {
  return vocab_->contains(id) ? std::string_view(vocab_->text(id)) : std::string_view();
}
float Tokenizer::token_score(TokenId id) const { return vocab_->contains(id) ? vocab_->score(id) : 0.0f; }
uint32_t Tokenizer::token_attributes(TokenId id) const { return vocab_->contains(id) ? vocab_->attributes(id) : 0; }
bool Tokenizer::is_control(TokenId id) const { return (token_attributes(id) & kAttrControl) != 0; }
TokenId Tokenizer::find_token(std::string_view text) const { return vocab_->find(text); }

TokenId Tokenizer::bos() const { return vocab_->special().bos; }
TokenId Tokenizer::eos() const { return vocab_->special().eos; }
TokenId Tokenizer::eot() const { return vocab_->special().eot; }
TokenId Tokenizer::eom() const { return vocab_->special().eom; }
TokenId Tokenizer::unk() const { return vocab_->special().unk; }
TokenId Tokenizer::pad() const { return vocab_->special().pad; }
TokenId Tokenizer::sep() const { return vocab_->special().sep; }
TokenId Tokenizer::fim_prefix() const { return vocab_->special().fim_pre; }
TokenId Tokenizer::fim_suffix() const { return vocab_->special().fim_suf; }
TokenId Tokenizer::fim_middle() const { return vocab_->special().fim_mid; }
bool Tokenizer::add_bos() const { return vocab_->flags().add_bos; }
bool Tokenizer::add_eos() const { return vocab_->flags().add_eos; }
bool Tokenizer::add_space_prefix() const { return vocab_->flags().add_space_prefix; }
bool Tokenizer::is_eog(TokenId id) const { return vocab_->is_eog(id); }
const std::vector<TokenId>& Tokenizer::eog_tokens() const { return vocab_->eog_tokens(); }

}  // namespace pagoda::tokenizer
