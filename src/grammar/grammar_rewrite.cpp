// The grammar as the compiler flattens it: character classes normalized, rules that can
// never finish left out, small non-recursive rules inlined (grammar_rewrite.h).

#include "grammar/grammar_rewrite.h"

#include <algorithm>
#include <functional>

namespace pagoda::grammar::detail {

// Sorted, merged, negation resolved, surrogates removed.
std::vector<CharRange> normalize_ranges(const Element& e) {
  std::vector<CharRange> r = e.ranges;
  std::sort(r.begin(), r.end(), [](const CharRange& a, const CharRange& b) { return a.first < b.first; });
  std::vector<CharRange> merged;
  for (const CharRange& x : r) {
    if (!merged.empty() && x.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, x.last);
    } else {
      merged.push_back(x);
    }
  }
  if (e.negated) {
    std::vector<CharRange> inv;
    uint32_t next = 0;
    for (const CharRange& x : merged) {
      if (x.first > next) inv.push_back({next, x.first - 1});
      next = x.last + 1;
    }
    if (next <= kMaxCodepoint) inv.push_back({next, kMaxCodepoint});
    merged = std::move(inv);
  }
  std::vector<CharRange> out;
  for (const CharRange& x : merged) {
    if (x.last < 0xD800 || x.first > 0xDFFF) {
      out.push_back(x);
      continue;
    }
    if (x.first < 0xD800) out.push_back({x.first, 0xD7FF});
    if (x.last > 0xDFFF) out.push_back({0xE000, x.last});
  }
  return out;
}

CharClassData make_class(const Element& e) {
  CharClassData c;
  c.ranges = normalize_ranges(e);
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t lo = 0;
    uint32_t hi = 0;
    if (b < 0x80) {
      lo = hi = b;
    } else if (b >= 0xC2 && b <= 0xDF) {
      lo = (b & 0x1F) << 6;
      hi = lo | 0x3F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      lo = std::max<uint32_t>((b & 0x0F) << 12, 0x800);
      hi = ((b & 0x0F) << 12) | 0xFFF;
    } else if (b >= 0xF0 && b <= 0xF4) {
      lo = std::max<uint32_t>((b & 0x07) << 18, 0x10000);
      hi = std::min<uint32_t>(((b & 0x07) << 18) | 0x3FFFF, kMaxCodepoint);
    } else {
      continue;
    }
    if (c.contains_any(lo, hi)) c.first_byte[b >> 6] |= uint64_t{1} << (b & 63);
  }
  return c;
}

// Rules that can match some finite string.
std::vector<char> productive_rules(const Grammar& g) {
  std::vector<char> productive(g.n_rules(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < g.n_rules(); ++r) {
      if (productive[r]) continue;
      for (const Sequence& alt : g.rule(r).alternatives) {
        bool all = true;
        for (const Element& e : alt) all = all && (!e.is_rule_ref() || productive[e.rule]);
        if (all) {
          productive[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return productive;
}

namespace {

// Rules on a cycle of references (Tarjan's strongly connected components).
std::vector<char> recursive_rules(const std::vector<std::vector<Sequence>>& alts) {
  const int32_t n = static_cast<int32_t>(alts.size());
  std::vector<char> recursive(n, 0);
  std::vector<int32_t> index(n, -1), low(n, 0), stack;
  std::vector<char> on_stack(n, 0);
  int32_t counter = 0;
  // Iterative DFS: frames of (rule, next alternative, next element).
  struct Frame {
    int32_t r;
    size_t a;
    size_t e;
  };
  for (int32_t s = 0; s < n; ++s) {
    if (index[s] >= 0) continue;
    std::vector<Frame> dfs{{s, 0, 0}};
    index[s] = low[s] = counter++;
    stack.push_back(s);
    on_stack[s] = 1;
    while (!dfs.empty()) {
      Frame& f = dfs.back();
      const std::vector<Sequence>& ra = alts[f.r];
      if (f.a < ra.size()) {
        if (f.e >= ra[f.a].size()) {
          ++f.a;
          f.e = 0;
          continue;
        }
        const Element& el = ra[f.a][f.e++];
        if (!el.is_rule_ref()) continue;
        const int32_t t = el.rule;
        if (t == f.r) recursive[t] = 1;
        if (index[t] < 0) {
          index[t] = low[t] = counter++;
          stack.push_back(t);
          on_stack[t] = 1;
          dfs.push_back({t, 0, 0});
        } else if (on_stack[t]) {
          low[f.r] = std::min(low[f.r], index[t]);
        }
        continue;
      }
      const int32_t r = f.r;
      dfs.pop_back();
      if (!dfs.empty()) low[dfs.back().r] = std::min(low[dfs.back().r], low[r]);
      if (low[r] == index[r]) {
        std::vector<int32_t> scc;
        int32_t x;
        do {
          x = stack.back();
          stack.pop_back();
          on_stack[x] = 0;
          scc.push_back(x);
        } while (x != r);
        if (scc.size() > 1) {
          for (int32_t y : scc) recursive[y] = 1;
        }
      }
    }
  }
  return recursive;
}

}  // namespace

// Inlines references to small rules that are not recursive, so that runs of characters
// stay inside one rule (fewer tokens cross a rule's end, fewer uncertain tokens): a rule
// of one short alternative anywhere, a rule of a few alternatives only into a short
// alternative (such as a repetition's `X h`), where copying the alternative per choice
// costs little. The language is unchanged; the positions added are bounded.
void inline_small_rules(std::vector<std::vector<Sequence>>& alts, int32_t root, const std::vector<char>& keep) {
  constexpr size_t kMaxInlineAlternatives = 8;   // of a rule to inline
  constexpr size_t kMaxInlineLength = 16;        // elements of each of its alternatives
  constexpr size_t kMaxHostLength = 6;           // of an alternative to inline a choice into
  constexpr size_t kMaxAlternatives = 32;        // of a rule after inlining into it
  const int32_t n = static_cast<int32_t>(alts.size());
  size_t total = 0;
  for (const auto& ra : alts) {
    for (const Sequence& a : ra) total += a.size() + 1;
  }
  size_t budget = total + 4096;  // elements the inlining may add
  const std::vector<char> recursive = recursive_rules(alts);
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& a : alts[r]) {
        bool all = true;
        for (const Element& e : a) all = all && e.is_rule_ref() && nullable[e.rule];
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  std::vector<char> small(n, 0);
  for (int32_t r = 0; r < n; ++r) {
    if (recursive[r] || r == root || alts[r].empty() || alts[r].size() > kMaxInlineAlternatives) continue;
    bool ok = true;
    for (const Sequence& a : alts[r]) ok = ok && a.size() <= kMaxInlineLength;
    small[r] = ok;
  }
  // Small rules first (they reference no rule that reaches them back): iterative
  // post-order over references to small rules.
  std::vector<int32_t> order;
  std::vector<char> state(n, 0);  // 0 new, 1 open, 2 done
  for (int32_t s = 0; s < n; ++s) {
    if (state[s]) continue;
    std::vector<std::pair<int32_t, size_t>> dfs{{s, 0}};  // rule, next (alternative, element) flattened
    state[s] = 1;
    while (!dfs.empty()) {
      auto& [r, next] = dfs.back();
      size_t k = next;
      int32_t child = -1;
      for (size_t a = 0, base = 0; a < alts[r].size() && child < 0; base += alts[r][a].size(), ++a) {
        for (size_t e = 0; e < alts[r][a].size(); ++e) {
          if (base + e < k) continue;
          k = base + e + 1;
          const Element& el = alts[r][a][e];
          if (el.is_rule_ref() && small[el.rule] && state[el.rule] == 0) {
            child = el.rule;
            break;
          }
        }
      }
      if (child < 0) {
        order.push_back(r);
        state[r] = 2;
        dfs.pop_back();
        continue;
      }
      next = k;
      state[child] = 1;
      dfs.push_back({child, 0});
    }
  }
  // The choices `els` expands to when inlined (`tail`: els ends its alternative; a
  // reference ending the alternative is left alone: its rule replaces the caller's frame,
  // no frame is pushed, so inlining it decides no more tokens). A body inlined into the
  // middle of an alternative is expanded again: its own last reference is not a tail there.
  std::function<std::vector<Sequence>(const Sequence&, bool, size_t, size_t, int)> expand =
      [&](const Sequence& els, bool tail, size_t host_len, size_t alts_so_far, int nesting) {
        std::vector<Sequence> partial{Sequence{}};
        for (size_t i = 0; i < els.size(); ++i) {
          const Element& e = els[i];
          bool inlined = false;
          // Nor, inside an inlined body, a last reference to a rule that can match
          // nothing: a repetition's next level, which would unroll the repetition.
          const bool body_end = nesting > 0 && i + 1 == els.size();
          if (e.is_rule_ref() && small[e.rule] && !keep[e.rule] && !(tail && i + 1 == els.size()) &&
              !(body_end && nullable[e.rule]) && nesting < 16) {
            const std::vector<Sequence>& body = alts[e.rule];
            size_t body_len = 0;
            for (const Sequence& b : body) body_len += b.size();
            const bool fits = body.size() == 1 || (host_len <= kMaxHostLength &&
                                                   alts_so_far + partial.size() * body.size() <= kMaxAlternatives);
            const size_t added = partial.size() * (body_len + body.size() * host_len);
            if (fits && added <= budget) {
              budget -= added;
              std::vector<Sequence> bodies;
              for (const Sequence& b : body) {
                for (Sequence& x : expand(b, false, host_len, alts_so_far + partial.size() * body.size(), nesting + 1)) {
                  bodies.push_back(std::move(x));
                }
              }
              std::vector<Sequence> next;
              for (const Sequence& p : partial) {
                for (const Sequence& b : bodies) {
                  Sequence s = p;
                  s.insert(s.end(), b.begin(), b.end());
                  next.push_back(std::move(s));
                }
              }
              partial = std::move(next);
              inlined = true;
            }
          }
          if (!inlined) {
            for (Sequence& p : partial) p.push_back(e);
          }
        }
        return partial;
      };
  for (const int32_t r : order) {
    std::vector<Sequence> out;
    for (const Sequence& alt : alts[r]) {
      for (Sequence& p : expand(alt, true, alt.size(), out.size(), 0)) out.push_back(std::move(p));
    }
    alts[r] = std::move(out);
  }
}

}  // namespace pagoda::grammar::detail
