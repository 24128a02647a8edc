// The template lexer: text and tags (this file), and the tokens inside a tag
// (lexer_tag.cpp). Whitespace handling follows jinja2's lexer rule by rule.
#include "jinja/lexer.h"

#include <algorithm>

#include "jinja/lexer_tag.h"
#include "jinja/text.h"

namespace pagoda::jinja {

Status syntax_error(int line, std::string_view what) {
  return invalid_argument("template syntax error, line " + std::to_string(line) + ": " +
                          std::string(what));
}

namespace {

// \r\n and \r become \n; without keep_trailing_newline one final newline goes.
std::string normalize_newlines(std::string_view source, bool keep_trailing_newline) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

bool all_space(std::string_view text) {
  for (size_t offset = 0; offset < text.size();) {
    if (!is_space(next_codepoint(text, offset))) return false;
  }
  return true;
}

// Length of the run of (Unicode) whitespace at `pos`.
size_t space_run(std::string_view text, size_t pos) {
  size_t end = pos;
  while (end < text.size()) {
    size_t next = end;
    if (!is_space(next_codepoint(text, next))) break;
    end = next;
  }
  return end - pos;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options)
      : source_(std::move(source)), options_(options) {}

  Expected<std::vector<Token>> run() {
    while (pos_ < source_.size()) PAGODA_TRY(lex_text_and_tag());
    tokens_.push_back(Token{TokenKind::kEnd, line_, {}, 0, 0.0});
    return std::move(tokens_);
  }

 private:
  // Text up to the next tag, then the tag.
  Status lex_text_and_tag() {
    const size_t tag = next_tag_start(pos_);
    std::string_view text = std::string_view(source_).substr(pos_, tag - pos_);
    if (tag == source_.size()) {
      emit_text(text, pos_);
      pos_ = tag;
      return {};
    }
    const char opener = source_[tag + 1];  // '{', '%' or '#'
    const char sign =
        tag + 2 < source_.size() && (source_[tag + 2] == '-' || source_[tag + 2] == '+')
            ? source_[tag + 2]
            : '\0';
    const size_t raw_body = opener == '%' ? match_raw_begin(tag) : 0;
    text = strip_before_tag(text, sign, opener != '{', pos_);
    emit_text(text, pos_);
    advance_to(tag);
    const size_t after_opener = tag + 2 + (sign != '\0' ? 1 : 0);
    if (raw_body != 0) return lex_raw(raw_body);
    if (opener == '#') return lex_comment(after_opener);
    return lex_tag(opener == '%', after_opener);
  }

  size_t next_tag_start(size_t from) const {
    for (size_t i = source_.find('{', from); i != std::string::npos; i = source_.find('{', i + 1)) {
      if (i + 1 < source_.size() &&
          (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) {
        return i;
      }
    }
    return source_.size();
  }

  // The text before a tag, as the tag's whitespace control leaves it.
  std::string_view strip_before_tag(std::string_view text, char sign, bool block_or_comment,
                                    size_t text_start) const {
    if (sign == '-') return strip(text, std::nullopt, false, true);
    if (sign == '+' || !options_.lstrip_blocks || !block_or_comment) return text;
    const size_t line_start = text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1;
    const bool line_starting = text_start == 0 || source_[text_start - 1] == '\n';
    if ((line_start > 0 || line_starting) && line_start < text.size() &&
        all_space(text.substr(line_start))) {
      return text.substr(0, line_start);
    }
    return text;
  }

  void emit_text(std::string_view text, size_t at) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenKind::kText, line_of(at), std::string(text), 0, 0.0});
  }

  // {% raw %}: if the block tag at `tag` opens a raw block, the offset its body starts
  // at; otherwise 0. Raw's opening tag has no trim_blocks newline.
  size_t match_raw_begin(size_t tag) const {
    size_t p = tag + 2;
    if (p < source_.size() && (source_[p] == '-' || source_[p] == '+')) ++p;
    p += space_run(source_, p);
    if (source_.compare(p, 3, "raw") != 0) return 0;
    p += 3;
    p += space_run(source_, p);
    if (source_.compare(p, 3, "-%}") == 0) return p + 3 + space_run(source_, p + 3);
    if (source_.compare(p, 2, "%}") == 0) return p + 2;
    return 0;
  }

  Status lex_raw(size_t body) {
    const int start_line = line_of(pos_);
    for (size_t tag = source_.find("{%", body); tag != std::string::npos;
         tag = source_.find("{%", tag + 1)) {
      size_t p = tag + 2;
      const char sign =
          p < source_.size() && (source_[p] == '-' || source_[p] == '+') ? source_[p] : '\0';
      if (sign != '\0') ++p;
      p += space_run(source_, p);
      if (source_.compare(p, 6, "endraw") != 0) continue;
      p += 6;
      p += space_run(source_, p);
      const size_t end = match_block_end(p);
      if (end == 0) continue;
      const std::string_view text = std::string_view(source_).substr(body, tag - body);
      emit_text(strip_before_tag(text, sign, true, body), body);
      advance_to(end);
      return {};
    }
    return syntax_error(start_line, "missing end of raw directive");
  }

  // A block end (%}, -%}, +%}) at `p`: the offset after it and the whitespace it eats,
  // or 0.
  size_t match_block_end(size_t p) const { return match_end(p, '%'); }

  size_t match_end(size_t p, char closer) const {
    auto at = [&](size_t i, char c) { return i < source_.size() && source_[i] == c; };
    if ((at(p, '+')) && at(p + 1, closer) && at(p + 2, '}')) return p + 3;
    if (at(p, '-') && at(p + 1, closer) && at(p + 2, '}')) return p + 3 + space_run(source_, p + 3);
    if (at(p, closer) && at(p + 1, '}')) {
      return p + 2 + (options_.trim_blocks && at(p + 2, '\n') ? 1 : 0);
    }
    return 0;
  }

  Status lex_comment(size_t body) {
    const int start_line = line_of(pos_);
    for (size_t p = body; p < source_.size(); ++p) {
      if (const size_t end = match_end(p, '#'); end != 0) {
        advance_to(end);
        return {};
      }
    }
    return syntax_error(start_line, "missing end of comment tag");
  }

  Status lex_tag(bool block, size_t body) {
    tokens_.push_back(Token{
        block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, line_of(pos_), {}, 0, 0.0});
    TagScanner scanner(source_, body);
    while (true) {
      if (scanner.balanced()) {
        const size_t end =
            block ? match_block_end(scanner.pos()) : match_variable_end(scanner.pos());
        if (end != 0) {
          tokens_.push_back(Token{block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd,
                                  line_of(scanner.pos()),
                                  {},
                                  0,
                                  0.0});
          advance_to(end);
          return {};
        }
      }
      if (scanner.at_end()) {
        return syntax_error(line_of(pos_), block ? "unexpected end of template: missing '%}'"
                                                 : "unexpected end of template: missing '}}'");
      }
      const int line = line_of(scanner.pos());
      Expected<std::optional<Token>> token = scanner.next();
      if (!token.ok()) return syntax_error(line, token.status().message());
      if (!token->has_value()) continue;  // whitespace
      (*token)->line = line;
      tokens_.push_back(std::move(**token));
    }
  }

  size_t match_variable_end(size_t p) const {
    if (source_.compare(p, 3, "-}}") == 0) return p + 3 + space_run(source_, p + 3);
    if (source_.compare(p, 2, "}}") == 0) return p + 2;
    return 0;
  }

  // Line numbers: counted incrementally, positions only move forward.
  int line_of(size_t at) {
    if (at < counted_to_) {
      return line_ - static_cast<int>(std::count(
                         source_.begin() + static_cast<std::ptrdiff_t>(at),
                         source_.begin() + static_cast<std::ptrdiff_t>(counted_to_), '\n'));
    }
    line_ += static_cast<int>(std::count(source_.begin() + static_cast<std::ptrdiff_t>(counted_to_),
                                         source_.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    counted_to_ = at;
    return line_;
  }

  void advance_to(size_t at) {
    line_of(at);
    pos_ = at;
  }

  std::string source_;
  LexerOptions options_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t counted_to_ = 0;  // line_ is the line of this offset
  int line_ = 1;
};

}  // namespace

Expected<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(normalize_newlines(source, options.keep_trailing_newline), options).run();
}

}  // namespace pagoda::jinja
