#include "tokenizer/detokenizer.h"

#include <algorithm>

#include "core/unicode.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {
namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

bool is_sentence_mark(char c) { return c == '?' || c == '!' || c == '.' || c == ','; }

// Each pass compacts the text in place, reading the original neighbours of each byte
// (a pass never looks at bytes it has already moved).
size_t drop_space_before_marks(std::string& s, size_t n) {
  size_t total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = s[i];
    if (s[i - 1] == ' ' && is_sentence_mark(x)) --total;
    s[total++] = x;
  }
  return total;
}

size_t drop_spaces_around_lone_apostrophe(std::string& s, size_t n) {
  size_t total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = s[i];
    if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
      --total;       // the space before
      s[++i] = '\0';  // and, skipped, the space after (which then no longer counts as one)
    }
    s[total++] = x;
  }
  return total;
}

size_t drop_space_before_contractions(std::string& s, size_t n) {
  size_t total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = s[i];
    if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = s[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n) {
        const char x2 = s[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    s[total++] = x;
  }
  return total;
}

}  // namespace

void clean_up_spaces(std::string& text) {
  size_t n = drop_space_before_marks(text, text.size());
  n = drop_spaces_around_lone_apostrophe(text, n);
  n = drop_space_before_contractions(text, n);
  text.resize(n);
}

size_t clean_cut_point(std::string_view text) {
  size_t clean_run = 0;  // bytes since the last space or apostrophe
  size_t cut = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    clean_run = (text[i] == ' ' || text[i] == '\'') ? 0 : clean_run + 1;
    if (clean_run >= 3) cut = i + 1;
  }
  return cut;
}

void move_valid_utf8(std::string& pending, std::string& out, bool final) {
  size_t pos = 0;
  while (pos < pending.size()) {
    const int length = utf8_validate_one(std::string_view(pending).substr(pos));
    if (length > 0) {
      out.append(pending, pos, static_cast<size_t>(length));
      pos += static_cast<size_t>(length);
    } else if (length < 0) {
      out += kReplacementUtf8;
      pos += static_cast<size_t>(-length);
    } else {  // an incomplete character at the end
      if (!final) break;
      out += kReplacementUtf8;
      pos = pending.size();
    }
  }
  pending.erase(0, pos);
}

namespace {

std::string_view piece_of(const Tokenizer& tokenizer, TokenId token, const DecodeOptions& options) {
  const bool shown = options.special || std::find(options.shown_tokens.begin(),
                                                  options.shown_tokens.end(),
                                                  token) != options.shown_tokens.end();
  return tokenizer.token_to_piece(token, shown);
}

}  // namespace

std::string Tokenizer::decode(std::span<const TokenId> tokens, const DecodeOptions& options) const {
  std::string text;
  bool strip_space = options.strip_leading_space && vocab_->flags().add_space_prefix;
  for (TokenId token : tokens) {
    std::string_view piece = piece_of(*this, token, options);
    if (strip_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    strip_space = false;  // only the first token, even when it shows nothing
    text += piece;
  }
  if (options.clean_spaces && vocab_->flags().clean_spaces) clean_up_spaces(text);
  return text;
}

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(tokenizer),
      options_(options),
      clean_(options.clean_spaces && tokenizer.vocab().flags().clean_spaces) {}

std::string StreamingDetokenizer::push(TokenId token) {
  std::string_view piece = piece_of(tokenizer_, token, options_);
  if (first_token_ && options_.strip_leading_space && tokenizer_.add_space_prefix() && !piece.empty() &&
      piece.front() == ' ') {
    piece.remove_prefix(1);
  }
  first_token_ = false;
  pending_raw_ += piece;
  return release(/*final=*/false);
}

std::string StreamingDetokenizer::finish() { return release(/*final=*/true); }

std::string StreamingDetokenizer::release(bool final) {
  const size_t cut = (final || !clean_) ? pending_raw_.size() : clean_cut_point(pending_raw_);
  std::string ready = pending_raw_.substr(0, cut);
  pending_raw_.erase(0, cut);
  if (clean_) clean_up_spaces(ready);
  pending_utf8_ += ready;
  std::string out;
  move_valid_utf8(pending_utf8_, out, final);
  return out;
}

}  // namespace pagoda::tokenizer
