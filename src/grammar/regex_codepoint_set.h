#pragma once
// A set of Unicode code points kept as sorted, disjoint, non-adjacent ranges: the
// character classes of the regex front end ([a-z], \d, [^"], .) before they are
// written as GBNF character classes.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"  // kMaxCodepoint

namespace pagoda::grammar {

class CodepointSet {
 public:
  CodepointSet() = default;
  static CodepointSet of(uint32_t first, uint32_t last);  // one range, first <= last
  static CodepointSet all() { return of(0, kMaxCodepoint); }

  void add(uint32_t first, uint32_t last);
  void add(uint32_t codepoint) { add(codepoint, codepoint); }
  void add(const CodepointSet& other);
  CodepointSet complement() const;
  CodepointSet minus(const CodepointSet& other) const;
  CodepointSet intersect(const CodepointSet& other) const;
  bool contains(uint32_t codepoint) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

  // The GBNF character class matching exactly this set ("[a-z_]" or, where shorter,
  // the negated form "[^\n]"). An empty set has no class: the caller decides.
  std::string to_gbnf_class() const;

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;  // inclusive [first, last], sorted
};

// The code point as it is written inside a GBNF literal or class: printable ASCII as
// itself (with a backslash before the characters GBNF reserves there), controls as
// \n \r \t or \xHH, the rest as \uHHHH or \UHHHHHHHH.
std::string gbnf_escape_codepoint(uint32_t codepoint, bool in_class);

}  // namespace pagoda::grammar
