#pragma once
// The tokens inside a {{ }} or {% %} tag: names, numbers, strings and operators, as
// jinja2's lexer reads them (Python literal syntax: 0x1F, 1_000, 1e-3, '\u00e9').
// Internal to the lexer.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "jinja/lexer.h"

namespace pagoda::jinja {

class TagScanner {
 public:
  TagScanner(std::string_view source, size_t pos) : source_(source), pos_(pos) {}

  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ >= source_.size(); }
  // No bracket is open: only then may the tag end (a '}}' inside a dict literal
  // closes the dict, not the tag).
  bool balanced() const { return brackets_.empty(); }

  // The next token (its line left for the caller to set), or nullopt after skipping
  // whitespace.
  Expected<std::optional<Token>> next();

 private:
  Expected<Token> number();
  Expected<Token> string_literal();
  Expected<Token> op();
  Token name();
  Status error(std::string_view what) const;

  std::string_view source_;
  size_t pos_;
  std::vector<char> brackets_;  // closers expected, innermost last
};

// Decodes the body of a string literal as Python's unicode-escape codec does.
Expected<std::string> decode_string_escapes(std::string_view body);

}  // namespace pagoda::jinja
