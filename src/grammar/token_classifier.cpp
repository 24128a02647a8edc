// A trie walk per position (token_classifier.h).

#include "grammar/token_classifier.h"

#include <algorithm>

namespace pagoda::grammar::detail {

Verdict verdict_at_end(const StepResult& end) {
  if (end.overflow) return Verdict::kUncertain;
  bool escaped = end.escaped_end;
  if (end.clean_end) return Verdict::kAccepted;
  for (const Top& t : end.tops) {
    if ((t.flags & kEscaped) == 0) return Verdict::kAccepted;
    escaped = true;
  }
  return escaped ? Verdict::kUncertain : Verdict::kRejected;
}

StepResult classified_start(uint32_t p) {
  StepResult start;
  start.tops.push_back(Top{p, 0, kMarker, 0});
  return start;
}

void store_token_set(std::vector<int32_t> accepted, std::vector<int32_t> uncertain, int32_t n_vocab,
                     PositionTokens& out) {
  const size_t words = bitmask_words(n_vocab);
  out = PositionTokens{};
  if (accepted.size() > words) {
    out.accepted_bits.assign(words, 0);
    for (int32_t id : accepted) out.accepted_bits[id / 32] |= 1u << (id % 32);
  } else {
    std::sort(accepted.begin(), accepted.end());
    out.accepted = std::move(accepted);
  }
  out.uncertain = std::move(uncertain);
}

void classify_position(const CompiledData& d, uint32_t p, ClassifyScratch& scratch,
                       PositionTokens& out) {
  const VocabIndex& vocab = *d.vocab;
  const StepResult start = classified_start(p);
  scratch.nodes.clear();
  std::vector<int32_t> accepted;
  std::vector<int32_t> uncertain;
  auto on_token = [&](int32_t idx, const StepResult* end) {
    switch (verdict_at_end(*end)) {
      case Verdict::kAccepted:
        accepted.push_back(vocab.sorted_tokens()[idx]);
        break;
      case Verdict::kUncertain:
        uncertain.push_back(idx);
        break;
      case Verdict::kRejected:
        break;
    }
  };
  auto on_dead = [&](int32_t begin, int32_t end, const StepResult* at) {
    if (!at->overflow) return;  // rejected
    for (int32_t i = begin; i < end; ++i) uncertain.push_back(i);
  };
  scratch.walker.walk_range(start, 0, static_cast<int32_t>(vocab.sorted_tokens().size()), on_token,
                            on_dead);
  store_token_set(std::move(accepted), std::move(uncertain), vocab.n_vocab(), out);
}

}  // namespace pagoda::grammar::detail
