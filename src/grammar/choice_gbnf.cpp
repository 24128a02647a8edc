#include "grammar/choice_gbnf.h"

#include "core/unicode.h"
#include "grammar/regex_codepoint_set.h"

namespace pagoda::grammar {

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  size_t offset = 0;
  while (offset < text.size()) {
    out += gbnf_escape_codepoint(decode_utf8(text, offset), /*in_class=*/false);
  }
  return out + "\"";
}

std::string choice_gbnf(std::span<const std::string> choices, std::string_view root_rule) {
  std::string out = std::string(root_rule) + " ::=";
  if (choices.empty()) return out + " [^\\x00-\\U0010FFFF]\n";
  for (size_t i = 0; i < choices.size(); ++i) {
    out += (i ? " | " : " ") + gbnf_literal(choices[i]);
  }
  return out + "\n";
}

}  // namespace pagoda::grammar
