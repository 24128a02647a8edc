#include "grammar/gbnf.h"

namespace pagoda::grammar {

Expected<Grammar> parse_gbnf(std::string_view, std::string_view) {
  return unsupported("parse_gbnf: not implemented yet");
}

std::string to_gbnf(const Grammar&) { return {}; }

}  // namespace pagoda::grammar
