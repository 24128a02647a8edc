// Bounded repetitions' chains of levels (repetition_chain.h).

#include "grammar/repetition_chain.h"

#include <algorithm>
#include <climits>

namespace pagoda::grammar::detail {
namespace {

// The rule that every non-empty alternative of rule r ends with a reference to (not r),
// when r also has an empty alternative; -1 otherwise.
int32_t next_level(const std::vector<Sequence>& alts, int32_t r) {
  int32_t next = -1;
  bool has_empty = false;
  for (const Sequence& a : alts) {
    if (a.empty()) {
      has_empty = true;
      continue;
    }
    const Element& last = a.back();
    if (!last.is_rule_ref() || last.rule == r || (next >= 0 && last.rule != next)) return -1;
    next = last.rule;
  }
  return has_empty ? next : -1;
}

// Whether `upper`'s alternatives are `lower`'s but for their last elements.
bool alike_but_last(const std::vector<Sequence>& upper, const std::vector<Sequence>& lower) {
  if (upper.size() != lower.size()) return false;
  for (size_t a = 0; a < upper.size(); ++a) {
    if (upper[a].size() != lower[a].size()) return false;
    if (!upper[a].empty() && !std::equal(upper[a].begin(), upper[a].end() - 1, lower[a].begin()))
      return false;
  }
  return true;
}

// `upper`'s alternatives without their last elements (the empty ones kept).
std::vector<Sequence> stripped(const std::vector<Sequence>& upper) {
  std::vector<Sequence> out = upper;
  for (Sequence& a : out) {
    if (!a.empty()) a.pop_back();
  }
  return out;
}

}  // namespace

std::vector<RepetitionChain> find_repetition_chains(
    const std::vector<std::vector<Sequence>>& alts) {
  const int32_t n = static_cast<int32_t>(alts.size());
  std::vector<int32_t> next(n);
  for (int32_t r = 0; r < n; ++r) next[r] = next_level(alts[r], r);
  // alike[r]: r's level and the next are alike, and the next has a next level too.
  std::vector<char> alike(n, 0);
  std::vector<char> has_upper(n, 0);
  for (int32_t r = 0; r < n; ++r) {
    alike[r] = next[r] >= 0 && next[next[r]] >= 0 && alike_but_last(alts[r], alts[next[r]]);
    if (alike[r]) has_upper[next[r]] = 1;
  }
  std::vector<RepetitionChain> found;
  std::vector<int32_t> seen(n, -1);  // the top whose walk last met the rule
  for (int32_t top = 0; top < n; ++top) {
    if (next[top] < 0 || has_upper[top]) continue;
    RepetitionChain chain{{top}};
    seen[top] = top;
    bool ok = true;
    for (int32_t r = top; alike[r];) {
      r = next[r];
      if (seen[r] == top) {  // a cycle: an unbounded repetition, not a chain
        ok = false;
        break;
      }
      seen[r] = top;
      chain.rules.push_back(r);
    }
    const int32_t last = chain.rules.back();
    const int32_t bottom = ok ? next[last] : -1;
    if (bottom < 0 || seen[bottom] == top || alts[bottom] != stripped(alts[last])) continue;
    chain.rules.push_back(bottom);
    found.push_back(std::move(chain));
  }
  // A rule in two chains (the bottom of one the top of another) stays in the longer.
  std::stable_sort(found.begin(), found.end(),
                   [](const RepetitionChain& a, const RepetitionChain& b) {
                     return a.rules.size() > b.rules.size();
                   });
  std::vector<char> used(n, 0);
  std::vector<RepetitionChain> chains;
  for (RepetitionChain& c : found) {
    bool free = true;
    for (int32_t r : c.rules) free = free && !used[r];
    if (!free) continue;
    for (int32_t r : c.rules) used[r] = 1;
    chains.push_back(std::move(c));
  }
  return chains;
}

void align_repetition_chains(std::vector<std::vector<Sequence>>& alts,
                             std::vector<RepetitionChain>& chains) {
  // Levels inlined differently (the inlining's budget ran out in some) get the same
  // alternatives: the most inlined level's, unless copying them to every level would
  // grow the grammar past this many elements.
  constexpr size_t kMaxChainElements = size_t{1} << 16;
  auto elements = [](const std::vector<Sequence>& a) {
    size_t n = 0;
    for (const Sequence& s : a) n += s.size() + 1;
    return n;
  };
  std::vector<RepetitionChain> kept;
  for (RepetitionChain& c : chains) {
    const size_t m = c.rules.size();
    bool ok = true;
    size_t most = 0;
    size_t fewest = 0;
    for (size_t lv = 0; ok && lv + 1 < m; ++lv) {
      const int32_t r = c.rules[lv];
      ok = next_level(alts[r], r) == c.rules[lv + 1];
      if (elements(alts[r]) > elements(alts[c.rules[most]])) most = lv;
      if (elements(alts[r]) < elements(alts[c.rules[fewest]])) fewest = lv;
    }
    if (!ok) continue;
    const size_t pick = elements(alts[c.rules[most]]) * m <= kMaxChainElements ? most : fewest;
    const std::vector<Sequence> body = alts[c.rules[pick]];
    c.end_rule = static_cast<int32_t>(alts.size());
    alts.push_back({Sequence{}});
    // Each level: the picked alternatives leading to its own next level. The bottom's
    // lead to a rule of the empty string instead (not to nothing: a reference left last
    // would become a tail call, whose rule's end is followed by whatever may follow
    // that rule anywhere).
    for (size_t lv = 0; lv < m; ++lv) {
      const int32_t next = lv + 1 < m ? c.rules[lv + 1] : c.end_rule;
      std::vector<Sequence>& level = alts[c.rules[lv]];
      level = body;
      for (Sequence& a : level) {
        if (!a.empty()) a.back() = Element::rule_ref(next);
      }
    }
    kept.push_back(std::move(c));
  }
  chains = std::move(kept);
}

namespace {

// Per rule: whether it can match the empty string.
std::vector<char> nullable_rules(const CompiledData& d) {
  std::vector<char> nullable(d.alt_starts.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < nullable.size(); ++r) {
      for (uint32_t q : d.alt_starts[r]) {
        if (nullable[r]) break;
        for (; d.positions[q].kind == PosKind::kRef && nullable[d.positions[q].arg]; ++q) {
        }
        if (d.positions[q].kind == PosKind::kEnd) {
          nullable[r] = 1;
          changed = true;
        }
      }
    }
  }
  return nullable;
}

}  // namespace

RepetitionLevels repetition_levels(const CompiledData& d,
                                   const std::vector<RepetitionChain>& chains,
                                   const std::vector<char>& reachable) {
  const std::vector<char> nullable = nullable_rules(d);
  RepetitionLevels out;
  out.level.assign(d.positions.size(), -1);
  out.column_of.assign(d.positions.size(), -1);
  out.top_copy.assign(d.positions.size(), kNoPosition);
  out.levels_to_bottom.assign(d.positions.size(), 0);
  for (const RepetitionChain& c : chains) {
    std::vector<int32_t> rules = c.rules;
    size_t first = 0;
    while (first < rules.size() && !reachable[rules[first]]) ++first;
    rules.erase(rules.begin(), rules.begin() + static_cast<std::ptrdiff_t>(first));
    if (rules.size() < 2) continue;
    const int32_t top = rules[0];
    bool ok = d.follow[c.end_rule] == d.follow[top];
    for (int32_t r : rules) {
      ok = ok && reachable[r] && d.follow[r] == d.follow[top] &&
           d.may_end_sentence[r] == d.may_end_sentence[top] &&
           d.alt_starts[r].size() == d.alt_starts[top].size();
    }
    if (!ok) continue;
    // Whether every level's body matches at least a character: then a token of n bytes
    // never gets n + 1 levels down.
    bool consumes = true;
    for (uint32_t start : d.alt_starts[top]) {
      bool some = d.positions[start].kind == PosKind::kEnd;  // the empty alternative
      for (uint32_t q = start; d.positions[q + 1].kind != PosKind::kEnd && !some; ++q) {
        some = d.positions[q].kind == PosKind::kClass || !nullable[d.positions[q].arg];
      }
      consumes = consumes && some;
    }
    const int32_t m = static_cast<int32_t>(rules.size());
    for (int32_t lv = 0; lv < m; ++lv) {
      for (size_t a = 0; a < d.alt_starts[top].size(); ++a) {
        const uint32_t start = d.alt_starts[rules[lv]][a];
        for (uint32_t q = start;; ++q) {
          out.level[q] = lv;
          if (consumes) {
            out.top_copy[q] = d.alt_starts[top][a] + (q - start);
            out.levels_to_bottom[q] = m - lv;
          }
          if (d.positions[q].kind == PosKind::kEnd) break;
        }
      }
    }
    // The end rule's end stands for the empty alternative of the level below the bottom.
    out.level[d.alt_starts[c.end_rule][0]] = m;
    const int32_t alike_from = consumes ? d.vocab->max_token_length() + 1 : INT32_MAX;
    for (size_t a = 0; a < d.alt_starts[top].size(); ++a) {
      const uint32_t start = d.alt_starts[top][a];
      for (uint32_t e = 0; d.positions[start + e].kind != PosKind::kEnd; ++e) {
        if (d.positions[start + e].kind != PosKind::kClass) continue;
        RepetitionColumn column;
        column.top_rule = top;
        column.alike_from = alike_from;
        for (int32_t r : rules) column.positions.push_back(d.alt_starts[r][a] + e);
        for (uint32_t p : column.positions)
          out.column_of[p] = static_cast<int32_t>(out.columns.size());
        out.columns.push_back(std::move(column));
      }
    }
  }
  return out;
}

}  // namespace pagoda::grammar::detail
