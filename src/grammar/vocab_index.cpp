#include "grammar/vocab_index.h"

#include <algorithm>
#include <numeric>

namespace pagoda::grammar {

std::shared_ptr<const VocabIndex> VocabIndex::create(std::vector<std::string> token_bytes,
                                                     std::vector<int32_t> stop_token_ids) {
  std::shared_ptr<VocabIndex> v(new VocabIndex());
  const int32_t n = static_cast<int32_t>(token_bytes.size());
  size_t total = 0;
  for (const std::string& t : token_bytes) total += t.size();
  v->bytes_.reserve(total);
  v->offsets_.reserve(token_bytes.size() + 1);
  for (const std::string& t : token_bytes) {
    v->bytes_ += t;
    v->offsets_.push_back(static_cast<uint32_t>(v->bytes_.size()));
  }
  token_bytes.clear();
  token_bytes.shrink_to_fit();

  const size_t words = bitmask_words(n);
  v->stop_mask_.assign(words, 0);
  for (int32_t id : stop_token_ids) {
    if (id < 0 || id >= n) continue;
    v->stop_mask_[id / 32] |= 1u << (id % 32);
  }
  for (int32_t id = 0; id < n; ++id) {
    if (v->is_stop_token(id)) v->stop_ids_.push_back(id);
  }

  v->matchable_mask_.assign(words, 0);
  for (int32_t id = 0; id < n; ++id) {
    if (v->token_bytes(id).empty() || v->is_stop_token(id)) continue;
    v->sorted_.push_back(id);
    v->matchable_mask_[id / 32] |= 1u << (id % 32);
    v->max_len_ = std::max<int32_t>(v->max_len_, static_cast<int32_t>(v->token_bytes(id).size()));
  }
  const VocabIndex& cv = *v;
  std::stable_sort(v->sorted_.begin(), v->sorted_.end(),
                   [&cv](int32_t a, int32_t b) { return cv.token_bytes(a) < cv.token_bytes(b); });
  v->lcp_.assign(v->sorted_.size(), 0);
  for (size_t i = 1; i < v->sorted_.size(); ++i) {
    std::string_view a = v->token_bytes(v->sorted_[i - 1]);
    std::string_view b = v->token_bytes(v->sorted_[i]);
    size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    v->lcp_[i] = static_cast<int32_t>(k);
  }
  return v;
}

int32_t VocabIndex::prefix_end(int32_t i, size_t k) const {
  const std::string_view prefix = sorted_bytes(i).substr(0, k);
  int32_t lo = i + 1;
  int32_t hi = static_cast<int32_t>(sorted_.size());
  while (lo < hi) {  // the first index whose token does not start with prefix
    const int32_t mid = lo + (hi - lo) / 2;
    if (sorted_bytes(mid).substr(0, k) == prefix) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

bool VocabIndex::is_stop_token(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return false;
  return (stop_mask_[id / 32] >> (id % 32)) & 1u;
}

}  // namespace pagoda::grammar
