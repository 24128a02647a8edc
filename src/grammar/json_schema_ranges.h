#pragma once
// Numbers between bounds as GBNF, digit by digit, for JSON Schema's minimum, maximum,
// exclusiveMinimum and exclusiveMaximum.

#include <cstdint>
#include <optional>
#include <string>

namespace pagoda::grammar {

// The decimal integers in [min, max] (a missing bound: unbounded), as JSON writes them:
// no leading zeros, no "-0". The caller ensures min <= max.
std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max);

struct NumberBound {
  int64_t value = 0;
  bool exclusive = false;
};

// JSON numbers (no exponent) between the bounds, exact for these integer bounds. A
// number "I.F" is compared through its integer part I: I strictly inside the bounds
// takes any fraction, I at an inclusive upper bound only zeros, I at an exclusive lower
// bound only a fraction with a non-zero digit. The caller ensures the range is not empty.
std::string number_range_gbnf(std::optional<NumberBound> lower, std::optional<NumberBound> upper);

}  // namespace pagoda::grammar
