#pragma once
// Template source -> tokens, with jinja2's whitespace rules: {%- -%} {{- -}} {#- -#}
// strip whitespace (newlines included) on that side, trim_blocks drops the first
// newline after a block or comment tag, lstrip_blocks drops the spaces and tabs before
// a block or comment tag that starts a line, {%+ and +%} turn those two off for one
// tag. Newlines (\r\n, \r) become \n, and one trailing newline is dropped, as jinja2
// does by default. {% raw %} blocks come out as text.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::jinja {

enum class TokenKind : uint8_t {
  kText,           // template text between tags
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,           // identifiers and keywords (if, for, not, in, ...)
  kString,         // text: the literal's value, escapes decoded
  kInteger,
  kFloat,
  kOperator,  // text: "+", "//", "==", "(", ...
  kEnd,       // end of the template
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  int line = 1;      // 1-based line of the token's first character
  std::string text;  // text, name, decoded string or operator
  int64_t integer = 0;
  double number = 0.0;
};

// The environment options that shape lexing. The defaults are Hugging Face's chat
// template environment (trim_blocks and lstrip_blocks on).
struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Errors name the line: "template syntax error, line 3: unexpected char '!'".
Expected<std::vector<Token>> tokenize(std::string_view source, const LexerOptions& options = {});

// "template syntax error, line N: what" (also used by the parser).
Status syntax_error(int line, std::string_view what);

}  // namespace pagoda::jinja
