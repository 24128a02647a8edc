#pragma once
// Prompt lookup: proposes what followed the latest earlier occurrence of a request's last
// n tokens (n as large as possible, from max_n down to min_n), searching the prompt and
// the output alike. Repeating or editing a given text (code, a paragraph, a JSON
// document) makes such matches common, and a proposal costs no model.

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::engine {

class NgramProposer {
 public:
  NgramProposer(int32_t min_n, int32_t max_n) : min_n_(min_n), max_n_(max_n) {}

  // Writes up to `max_tokens` proposed next tokens of `tokens` into `out` (cleared
  // first; left empty when no suffix of at least min_n tokens occurred before). Among
  // matches of the longest suffix, the latest occurrence wins.
  void propose(std::span<const int32_t> tokens, int32_t max_tokens, std::vector<int32_t>& out) const;

 private:
  int32_t min_n_;
  int32_t max_n_;
};

}  // namespace pagoda::engine
