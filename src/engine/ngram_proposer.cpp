#include "engine/ngram_proposer.h"

#include <algorithm>
#include <cstddef>

namespace pagoda::engine {

void NgramProposer::propose(std::span<const int32_t> tokens, int32_t max_tokens,
                            std::vector<int32_t>& out) const {
  out.clear();
  const auto size = static_cast<ptrdiff_t>(tokens.size());
  if (max_tokens <= 0 || size < static_cast<ptrdiff_t>(min_n_) + 1) return;
  const int32_t last = tokens[static_cast<size_t>(size - 1)];
  // One backward scan over candidate ends: `end` is where an earlier occurrence of the
  // suffix stops (exclusive), so tokens[end] is its continuation.
  ptrdiff_t best_end = -1;
  int32_t best_n = 0;
  for (ptrdiff_t end = size - 1; end >= 1; --end) {
    if (tokens[static_cast<size_t>(end - 1)] != last) continue;
    int32_t n = 1;
    while (n < max_n_ && end - 1 - n >= 0 &&
           tokens[static_cast<size_t>(end - 1 - n)] == tokens[static_cast<size_t>(size - 1 - n)]) {
      ++n;
    }
    if (n > best_n) {
      best_n = n;
      best_end = end;
      if (n == max_n_) break;
    }
  }
  if (best_n < min_n_) return;
  const ptrdiff_t available = size - best_end;
  const ptrdiff_t n_out = std::min<ptrdiff_t>(available, max_tokens);
  out.assign(tokens.begin() + best_end, tokens.begin() + best_end + n_out);
}

}  // namespace pagoda::engine
