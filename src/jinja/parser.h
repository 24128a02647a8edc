#pragma once
// Tokens -> syntax tree, following jinja2's grammar (operator precedence, implicit
// tuples, `is` tests, filters, call arguments, slices) and its statements: if / elif /
// else, for (else, `if` filter, recursive), set (and block set, namespace attributes),
// macro, call, filter, with, break / continue, and Hugging Face's {% generation %}.
// Template inheritance and includes (extends, block, include, import) are not
// supported: a chat template is one self-contained file.

#include <vector>

#include "core/status.h"
#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace pagoda::jinja {

// Errors: "template syntax error, line N: ..." (unknown tags, filters and tests too).
Expected<Body> parse_tokens(std::vector<Token> tokens);

}  // namespace pagoda::jinja
