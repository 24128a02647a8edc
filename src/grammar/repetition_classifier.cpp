// The token sets of every copy of a bounded repetition's element from one trie walk at
// its top copy (repetition_chain.h has the levels and why they suffice).
//
// Per token the walk gives the fewest levels a copy needs for the token to be accepted
// (a path not escaped alive at its end, or leaving the chain at its last byte) and to
// be uncertain (a path that left the chain at an earlier byte survives the rest, which
// depends on the rest only: checked from the chain's follow set). A copy with k levels
// accepts the tokens that need at most k, leaves to the run-time check those that need
// more to be accepted but at most k to escape, and rejects the rest. Tokens whose walk
// hit a bound (or could have, counting the paths that left the chain with it) are
// walked at each copy, as classify_position would.

#include <algorithm>
#include <string_view>

#include "grammar/token_classifier.h"

namespace pagoda::grammar::detail {
namespace {

// The paths that left the chain (popped kMarker): they start from the chain's follow
// set, the same at every level and byte (Stepper::escape), and what they do over the
// token's remaining bytes depends on those bytes only.
class EscapeCheck {
 public:
  enum Result { kDies, kSurvives, kBound };

  EscapeCheck(const CompiledData& d, int32_t rule, ClassifyScratch& s)
      : stepper_(s.escape_stepper), nodes_(s.escape_nodes) {
    nodes_.clear();
    stepper_.escape(rule, start_);
    for (const Top& t : start_.tops) {
      const CharClassData& c = d.classes[d.positions[t.pos].arg];
      for (int w = 0; w < 4; ++w) first_byte_[w] |= c.first_byte[w];
    }
  }
  bool overflow() const { return start_.overflow; }
  const StepResult& start() const { return start_; }

  // Whether those paths, started before `rest`, are alive after it; adds the tops each
  // byte pushed and the closure steps it took to pushed[i] and steps[i] (i: the byte's
  // index in rest).
  Result follow(std::string_view rest, int32_t* pushed, int32_t* steps) {
    const auto b0 = static_cast<uint8_t>(rest[0]);
    if (((first_byte_[b0 >> 6] >> (b0 & 63)) & 1) == 0) return kDies;  // most: at the first byte
    const size_t mark = nodes_.size();
    const StepResult* cur = &start_;
    Result result = kSurvives;
    for (size_t i = 0; i < rest.size(); ++i) {
      StepResult& next = buf_[i & 1];
      stepper_.step(cur->tops, static_cast<uint8_t>(rest[i]), next);
      pushed[i] += next.pushed;
      steps[i] += next.closure_steps;
      if (next.overflow) {
        result = kBound;
        break;
      }
      if (next.tops.empty() && !(i + 1 == rest.size() && next.escaped_end)) {
        result = kDies;
        break;
      }
      cur = &next;
    }
    nodes_.resize(mark);
    return result;
  }

 private:
  Stepper& stepper_;
  std::vector<Node>& nodes_;
  StepResult start_;
  StepResult buf_[2];
  uint64_t first_byte_[4] = {0, 0, 0, 0};
};

// The levels a copy needs per token (sorted index), and the tokens left to per-copy walks.
struct LevelNeeds {
  std::vector<int32_t> accept;  // kNoLevel: never accepted
  std::vector<int32_t> escape;  // kNoLevel: never uncertain
  std::vector<int32_t> unsure;  // ascending
};

// The walk at the top copy follows the paths in the chain only (Stepper::set_end_levels);
// the paths that leave it are followed per token from each byte where some did. A copy's
// own walk follows both at once, under shared bounds: where the sums of the two could
// pass a bound, the token is left to per-copy walks.
class TopCopyWalk {
 public:
  TopCopyWalk(const CompiledData& d, const RepetitionLevels& rep, EscapeCheck& escape,
              ClassifyScratch& scratch)
      : d_(d), rep_(rep), escape_(escape), scratch_(scratch) {
    const auto n_tokens = d.vocab->sorted_tokens().size();
    needs_.accept.assign(n_tokens, kNoLevel);
    needs_.escape.assign(n_tokens, kNoLevel);
    const size_t max_len = static_cast<size_t>(d.vocab->max_token_length()) + 1;
    pushed_.resize(max_len);
    steps_.resize(max_len);
  }

  LevelNeeds run(uint32_t top) {
    TrieWalker& walker = scratch_.walker;
    auto on_token = [&](int32_t idx, const StepResult* end) {
      int32_t accept = end->clean_end_level;
      bool unsure = end->overflow;
      for (const Top& t : end->tops) {
        const int32_t level = level_of(t);
        unsure = unsure || level < 0;
        accept = std::min(accept, level + 1);
      }
      judge(idx, d_.vocab->sorted_bytes(idx).size(), unsure ? -1 : accept);
    };
    auto on_dead = [&](int32_t begin, int32_t end, const StepResult* at) {
      // Rejected at every copy unless a path left the chain on the way (most die at once).
      bool left = at->overflow;
      for (size_t i = 1; i <= walker.computed() && !left; ++i) {
        left = walker.prefix_state(i).clean_end_rules > 0;
      }
      if (!left) return;
      for (int32_t i = begin; i < end; ++i) {
        judge(i, walker.computed(), at->overflow ? -1 : kNoLevel);
      }
    };
    scratch_.nodes.clear();
    walker.set_end_levels(rep_.level.data());
    walker.walk_range(classified_start(top), 0, static_cast<int32_t>(needs_.accept.size()),
                      on_token, on_dead);
    walker.set_end_levels(nullptr);
    return std::move(needs_);
  }

 private:
  // A path's level: that of the chain position at the bottom of its stack.
  int32_t level_of(const Top& t) const {
    uint32_t pos = t.pos;
    for (int32_t n = t.parent; n >= 0; n = scratch_.nodes[n].parent) pos = scratch_.nodes[n].pos;
    return rep_.level[pos];
  }

  // Token idx, whose paths in the chain lived through its first `reach` bytes and need
  // `accept` levels to be alive at its end (-1: unsure).
  void judge(int32_t idx, size_t reach, int32_t accept) {
    const std::string_view bytes = d_.vocab->sorted_bytes(idx);
    std::fill_n(pushed_.begin(), bytes.size() + 1, 0);
    std::fill_n(steps_.begin(), bytes.size() + 1, 0);
    const StepResult& start = escape_.start();
    int32_t escape_level = kNoLevel;
    bool unsure = accept < 0;
    for (size_t i = 1; i <= reach && !unsure; ++i) {
      const StepResult& at = scratch_.walker.prefix_state(i);
      if (at.clean_end_rules == 0) continue;
      unsure = at.clean_end_level < 0;
      pushed_[i] += at.clean_end_rules * start.pushed;
      steps_[i] += at.clean_end_rules * start.closure_steps;
      if (i == bytes.size()) continue;  // left the chain at its end: accepted at those levels
      const EscapeCheck::Result r =
          escape_.follow(bytes.substr(i), &pushed_[i + 1], &steps_[i + 1]);
      unsure = unsure || r == EscapeCheck::kBound;
      if (r == EscapeCheck::kSurvives) escape_level = std::min(escape_level, at.clean_end_level);
    }
    constexpr int32_t kMaxEscapedSteps = GrammarMatcher::kMaxClosureSteps - kLocalMaxClosureSteps;
    for (size_t i = 1; i <= bytes.size() && !unsure; ++i) {
      unsure = pushed_[i] > kMaxEscapedTops || steps_[i] > kMaxEscapedSteps;
    }
    if (unsure) {
      needs_.unsure.push_back(idx);
      return;
    }
    needs_.accept[idx] = accept;
    needs_.escape[idx] = escape_level;
  }

  const CompiledData& d_;
  const RepetitionLevels& rep_;
  EscapeCheck& escape_;
  ClassifyScratch& scratch_;
  LevelNeeds needs_;
  // Per byte of the token: the escaped tops pushed and the closure steps, summed over the
  // paths that left the chain.
  std::vector<int32_t> pushed_;
  std::vector<int32_t> steps_;
};

// Per k (a copy with k levels): the tokens it accepts that a copy with k - 1 does not,
// whether any token's verdict differs from k - 1's, and the tokens that may be
// uncertain at some k.
struct NeedIndex {
  std::vector<std::vector<int32_t>> accepted_at;  // [k]: token ids
  std::vector<char> changes;                      // [k]
  std::vector<int32_t> escapable;                 // sorted indices, ascending
};

NeedIndex index_needs(const VocabIndex& vocab, const LevelNeeds& needs, int32_t n_levels) {
  NeedIndex index;
  index.accepted_at.resize(n_levels + 1);
  index.changes.assign(n_levels + 2, 0);
  for (int32_t idx = 0; idx < static_cast<int32_t>(needs.accept.size()); ++idx) {
    const int32_t accept = std::max(0, needs.accept[idx]);
    if (accept <= n_levels) {
      index.accepted_at[accept].push_back(vocab.sorted_tokens()[idx]);
      index.changes[accept] = 1;
    }
    if (needs.escape[idx] < needs.accept[idx]) {
      index.escapable.push_back(idx);
      index.changes[std::clamp(needs.escape[idx], 0, n_levels + 1)] = 1;
    }
  }
  return index;
}

// A set from the accepted tokens (bitmask `bits` of `n_bits` tokens, and `more` token
// ids not in it) and the uncertain sorted indices, stored as classify_position stores.
PositionTokens make_set(const std::vector<uint32_t>& bits, size_t n_bits,
                        const std::vector<int32_t>& more, std::vector<int32_t> uncertain,
                        int32_t n_vocab) {
  PositionTokens set;
  if (n_bits + more.size() > bits.size()) {
    set.accepted_bits = bits;
    for (int32_t id : more) set.accepted_bits[id / 32] |= 1u << (id % 32);
    set.uncertain = std::move(uncertain);
    return set;
  }
  std::vector<int32_t> accepted = more;
  for (size_t w = 0; w < bits.size(); ++w) {
    for (uint32_t b = bits[w]; b != 0; b &= b - 1) {
      accepted.push_back(static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(b))));
    }
  }
  store_token_set(std::move(accepted), std::move(uncertain), n_vocab, set);
  return set;
}

// The set of the copy at `level`: a new one, or the previous one's when equal.
void add_level_set(ColumnSets& out, int32_t level, PositionTokens set) {
  if (out.sets.empty() || !(set == out.sets.back())) out.sets.push_back(std::move(set));
  out.set_of_level[level] = static_cast<int32_t>(out.sets.size()) - 1;
}

// The fallback: a walk per copy, up to the copies that are alike.
void classify_each_copy(const CompiledData& d, const RepetitionColumn& column,
                        ClassifyScratch& scratch, ColumnSets& out, CompileStats& stats) {
  const auto n_levels = static_cast<int32_t>(column.positions.size());
  const int32_t walked = std::min(n_levels, column.alike_from);
  for (int32_t k = 1; k <= n_levels; ++k) {
    if (k > walked) {
      out.set_of_level[n_levels - k] = out.set_of_level[n_levels - walked];
      continue;
    }
    PositionTokens set;
    classify_position(d, column.positions[n_levels - k], scratch, set);
    add_level_set(out, n_levels - k, std::move(set));
  }
  stats.n_walks += walked;
}

}  // namespace

void classify_column(const CompiledData& d, const RepetitionLevels& rep,
                     const RepetitionColumn& column, ClassifyScratch& scratch, ColumnSets& out,
                     CompileStats& stats) {
  const VocabIndex& vocab = *d.vocab;
  const auto n_levels = static_cast<int32_t>(column.positions.size());
  out.sets.clear();
  out.set_of_level.assign(n_levels, -1);
  EscapeCheck escape(d, column.top_rule, scratch);
  if (escape.overflow()) return classify_each_copy(d, column, scratch, out, stats);
  const LevelNeeds needs = TopCopyWalk(d, rep, escape, scratch).run(column.positions[0]);
  ++stats.n_walks;
  // Where many tokens hit a bound, the per-copy walks cost less than this detour.
  if (needs.unsure.size() * 8 > needs.accept.size()) {
    return classify_each_copy(d, column, scratch, out, stats);
  }
  const NeedIndex index = index_needs(vocab, needs, n_levels);
  // Copies from the bottom (k levels: k = 1 at the bottom): each accepts what the one
  // below does and more, and shares its set when nothing changes between them.
  std::vector<uint32_t> bits(bitmask_words(vocab.n_vocab()), 0);
  size_t n_bits = 0;
  std::vector<int32_t> unsure_accepted;
  std::vector<int32_t> unsure_uncertain;
  for (int32_t k = 0; k <= n_levels; ++k) {
    for (int32_t id : index.accepted_at[k]) bits[id / 32] |= 1u << (id % 32);
    n_bits += index.accepted_at[k].size();
    if (k == 0) continue;
    const int32_t level = n_levels - k;
    const bool walk_unsure = !needs.unsure.empty() && k <= column.alike_from;
    if (k > 1 && !index.changes[k] && !walk_unsure) {
      out.set_of_level[level] = out.set_of_level[level + 1];
      continue;
    }
    if (walk_unsure) {
      // The tokens the top copy's walk could not speak for, walked at this copy.
      unsure_accepted.clear();
      unsure_uncertain.clear();
      auto on_token = [&](int32_t idx, const StepResult* end) {
        const Verdict v = end != nullptr                         ? verdict_at_end(*end)
                          : scratch.walker.last_state().overflow ? Verdict::kUncertain
                                                                 : Verdict::kRejected;
        if (v == Verdict::kAccepted) unsure_accepted.push_back(vocab.sorted_tokens()[idx]);
        if (v == Verdict::kUncertain) unsure_uncertain.push_back(idx);
      };
      scratch.nodes.clear();
      scratch.walker.walk_list(classified_start(column.positions[level]), needs.unsure, on_token);
      stats.n_rewalked += static_cast<int64_t>(needs.unsure.size());
    }
    std::vector<int32_t> uncertain;
    for (int32_t idx : index.escapable) {
      if (needs.escape[idx] <= k && k < needs.accept[idx]) uncertain.push_back(idx);
    }
    const auto mid = static_cast<std::ptrdiff_t>(uncertain.size());
    uncertain.insert(uncertain.end(), unsure_uncertain.begin(), unsure_uncertain.end());
    std::inplace_merge(uncertain.begin(), uncertain.begin() + mid, uncertain.end());
    add_level_set(out, level,
                  make_set(bits, n_bits, unsure_accepted, std::move(uncertain), vocab.n_vocab()));
  }
}

}  // namespace pagoda::grammar::detail
