#pragma once
// The regex front end's parser: a pattern (UTF-8) to a small syntax tree of code
// points, classes, sequences, alternatives and bounded repetitions. The subset is the
// one JSON Schema `pattern` and guided-regex users write (see regex_to_gbnf.h).

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "grammar/regex_codepoint_set.h"

namespace pagoda::grammar {

struct RegexNode {
  enum class Kind {
    kCharacter,    // one code point from `set` ("a", "\.", "[a-z]", "\d", ".")
    kSequence,     // children one after another (empty: matches the empty string)
    kAlternation,  // one of the children
    kRepeat,       // children[0] between min and max times (max empty: unbounded)
  };
  Kind kind = Kind::kSequence;
  CodepointSet set;
  std::vector<RegexNode> children;
  size_t min = 0;
  std::optional<size_t> max;
};

// The parsed pattern with its end anchors dropped (a generated string is always matched
// whole). Errors name the construct and its byte offset in the pattern.
Expected<RegexNode> parse_regex(std::string_view pattern);

}  // namespace pagoda::grammar
