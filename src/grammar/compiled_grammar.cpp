#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <thread>

#include "grammar/compiled_grammar_internal.h"

namespace pagoda::grammar {

CompiledGrammar::CompiledGrammar(std::unique_ptr<detail::CompiledData> data) : data_(std::move(data)) {}
CompiledGrammar::~CompiledGrammar() = default;
const Grammar& CompiledGrammar::grammar() const { return data_->grammar; }
const VocabIndex& CompiledGrammar::vocab() const { return *data_->vocab; }
const std::shared_ptr<const VocabIndex>& CompiledGrammar::vocab_ptr() const { return data_->vocab; }
const CompileStats& CompiledGrammar::stats() const { return data_->stats; }

namespace {

using namespace detail;

constexpr size_t kMaxPositions = size_t{1} << 24;

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

// Inlines references to small rules that are not recursive, so that runs of characters
// stay inside one rule (fewer tokens cross a rule's end, fewer uncertain tokens): a rule
// of one short alternative anywhere, a rule of a few alternatives only into a short
// alternative (such as a repetition's `X h`), where copying the alternative per choice
// costs little. The language is unchanged; the positions added are bounded.
void inline_small_rules(std::vector<std::vector<Sequence>>& alts, int32_t root) {
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
          if (e.is_rule_ref() && small[e.rule] && !(tail && i + 1 == els.size()) && nesting < 16) {
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

// A 128-bit structural signature of what a token walk from a position can see: its
// class and, up to max_chars characters on (a token has at most that many), the classes,
// rule structure and ends after it; where the position's own alternative ends, the
// positions that may follow its rule. Two positions with equal signatures get equal
// token sets (the walk's outcome depends on nothing else), so positions alike within a
// token's reach, such as those of a long bounded repetition, are classified once.
struct Signature {
  uint64_t a = 0x243F6A8885A308D3ULL;
  uint64_t b = 0x13198A2E03707344ULL;
  friend bool operator==(const Signature&, const Signature&) = default;
  void feed(uint64_t v) {
    a = mix64((a ^ v) * 0x9E3779B97F4A7C15ULL + 1);
    b = mix64((b + v) * 0xC2B2AE3D27D4EB4FULL + 7);
  }
  void feed(const Signature& s) {
    feed(s.a);
    feed(s.b);
  }
  static uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
  }
};
struct SignatureHash {
  size_t operator()(const Signature& s) const { return static_cast<size_t>(s.a ^ (s.b << 1)); }
};

class PositionSigner {
 public:
  PositionSigner(const CompiledData& d, int32_t max_chars) : d_(d), max_chars_(max_chars) {
    // The fewest characters each rule matches (capped past max_chars).
    const int32_t cap = max_chars + 1;
    min_chars_.assign(d.alt_starts.size(), cap);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < d.alt_starts.size(); ++r) {
        for (uint32_t start : d.alt_starts[r]) {
          int32_t n = 0;
          for (uint32_t q = start; d.positions[q].kind != PosKind::kEnd && n < cap; ++q) {
            n += d.positions[q].kind == PosKind::kClass ? 1 : min_chars_[d.positions[q].arg];
          }
          n = std::min(n, cap);
          if (n < min_chars_[r]) {
            min_chars_[r] = n;
            changed = true;
          }
        }
      }
    }
    follow_.resize(d.follow.size());
    for (size_t r = 0; r < d.follow.size(); ++r) {
      Signature s;
      s.feed(0xF0);
      s.feed(d.may_end_sentence[r]);
      for (uint32_t f : d.follow[r]) s.feed(f);
      follow_[r] = s;
    }
  }

  Signature position(uint32_t p) {
    Signature s;
    s.feed(0xA0);
    s.feed(static_cast<uint64_t>(d_.positions[p].arg));
    s.feed(sequence(p + 1, max_chars_ - 1, true));
    return s;
  }

 private:
  // From position `pos` to its alternative's end, seeing `depth` more characters; `top`:
  // the alternative of the classified position (its end leads to the follow set).
  Signature sequence(uint32_t pos, int32_t depth, bool top) {
    const uint64_t key = ((static_cast<uint64_t>(pos) * static_cast<uint64_t>(max_chars_ + 1) +
                           static_cast<uint64_t>(depth)) << 1) | (top ? 1 : 0);
    auto it = seq_memo_.find(key);
    if (it != seq_memo_.end()) return it->second;
    Signature s;
    const Position& p = d_.positions[pos];
    switch (p.kind) {
      case PosKind::kClass:
        s.feed(0xC0);
        if (depth > 0) {
          s.feed(static_cast<uint64_t>(p.arg));
          s.feed(sequence(pos + 1, depth - 1, top));
        }
        break;
      case PosKind::kRef: {
        s.feed(0xB0);
        s.feed(d_.positions[pos + 1].kind == PosKind::kEnd ? 1 : 0);  // a tail call pushes no frame
        s.feed(rule(p.arg, depth));
        // What follows the reference is seen only after the rule's fewest characters.
        const int32_t rest = depth - min_chars_[p.arg];
        if (rest >= 0) s.feed(sequence(pos + 1, rest, top));
        break;
      }
      case PosKind::kEnd:
        s.feed(0xE0);
        if (top) s.feed(follow_[p.rule]);
        break;
    }
    seq_memo_.emplace(key, s);
    return s;
  }

  Signature rule(int32_t r, int32_t depth) {
    const uint64_t key = static_cast<uint64_t>(r) * static_cast<uint64_t>(max_chars_ + 1) + static_cast<uint64_t>(depth);
    auto it = rule_memo_.find(key);
    if (it != rule_memo_.end()) return it->second;
    Signature s;
    s.feed(0xD0);
    for (uint32_t start : d_.alt_starts[r]) s.feed(sequence(start, depth, false));
    rule_memo_.emplace(key, s);
    return s;
  }

  const CompiledData& d_;
  int32_t max_chars_;
  std::vector<Signature> follow_;
  std::vector<int32_t> min_chars_;  // per rule
  std::unordered_map<uint64_t, Signature> seq_memo_;
  std::unordered_map<uint64_t, Signature> rule_memo_;
};

Status build_tables(CompiledData& d) {
  const Grammar& g = d.grammar;
  const int32_t n_rules = g.n_rules();
  const std::vector<char> productive = productive_rules(g);
  d.root = g.root();
  d.alt_starts.assign(n_rules, {});
  // The alternatives that can complete (one needing an unproductive rule never does).
  std::vector<std::vector<Sequence>> rule_alts(n_rules);
  for (int32_t r = 0; r < n_rules; ++r) {
    for (const Sequence& alt : g.rule(r).alternatives) {
      bool usable = true;
      for (const Element& e : alt) usable = usable && (!e.is_rule_ref() || productive[e.rule]);
      if (usable) rule_alts[r].push_back(alt);
    }
  }
  inline_small_rules(rule_alts, d.root);
  std::vector<std::pair<std::vector<CharRange>, int32_t>> class_index;  // for sharing equal classes
  std::vector<std::vector<uint32_t>> refs_to(n_rules);  // ref positions per referenced rule
  for (int32_t r = 0; r < n_rules; ++r) {
    for (const Sequence& alt : rule_alts[r]) {
      d.alt_starts[r].push_back(static_cast<uint32_t>(d.positions.size()));
      for (const Element& e : alt) {
        if (e.is_rule_ref()) {
          refs_to[e.rule].push_back(static_cast<uint32_t>(d.positions.size()));
          d.positions.push_back(Position{PosKind::kRef, e.rule, r});
        } else {
          std::vector<CharRange> norm = normalize_ranges(e);
          int32_t id = -1;
          for (const auto& [ranges, cid] : class_index) {
            if (ranges == norm) {
              id = cid;
              break;
            }
          }
          if (id < 0) {
            id = static_cast<int32_t>(d.classes.size());
            d.classes.push_back(make_class(e));
            if (class_index.size() < 4096) class_index.emplace_back(std::move(norm), id);
          }
          d.positions.push_back(Position{PosKind::kClass, id, r});
        }
      }
      d.positions.push_back(Position{PosKind::kEnd, 0, r});
      if (d.positions.size() > kMaxPositions) return invalid_argument("grammar too large to compile");
    }
  }

  // Rules reachable from the root.
  std::vector<char> reachable(n_rules, 0);
  std::vector<int32_t> todo{d.root};
  reachable[d.root] = 1;
  while (!todo.empty()) {
    const int32_t r = todo.back();
    todo.pop_back();
    for (uint32_t s : d.alt_starts[r]) {
      for (uint32_t p = s; d.positions[p].kind != PosKind::kEnd; ++p) {
        if (d.positions[p].kind == PosKind::kRef && !reachable[d.positions[p].arg]) {
          reachable[d.positions[p].arg] = 1;
          todo.push_back(d.positions[p].arg);
        }
      }
    }
  }

  // Follow sets: what may come after a rule's end, through tail references too.
  d.follow.assign(n_rules, {});
  d.may_end_sentence.assign(n_rules, 0);
  d.may_end_sentence[d.root] = 1;
  std::vector<std::vector<int32_t>> tail_hosts(n_rules);  // rules that reference r at an alternative's end
  for (int32_t r = 0; r < n_rules; ++r) {
    for (uint32_t q : refs_to[r]) {
      const int32_t host = d.positions[q].rule;
      if (!reachable[host]) continue;
      if (d.positions[q + 1].kind == PosKind::kEnd) {
        tail_hosts[r].push_back(host);
      } else {
        d.follow[r].push_back(q + 1);
      }
    }
  }
  for (int32_t r = 0; r < n_rules; ++r) {
    if (!reachable[r]) continue;
    std::vector<char> seen(n_rules, 0);
    std::vector<int32_t> stack{r};
    seen[r] = 1;
    std::vector<uint32_t> all;
    bool ends = false;
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      all.insert(all.end(), d.follow[x].begin(), d.follow[x].end());
      ends = ends || x == d.root;
      for (int32_t h : tail_hosts[x]) {
        if (!seen[h]) {
          seen[h] = 1;
          stack.push_back(h);
        }
      }
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    d.follow[r] = std::move(all);
    d.may_end_sentence[r] = ends;
  }
  // Positions to classify: those of reachable rules; positions whose walks cannot differ
  // (see PositionSigner) share one set.
  d.token_set_of.assign(d.positions.size(), -1);
  PositionSigner signer(d, std::max(1, d.vocab->max_token_length()));
  std::unordered_map<Signature, int32_t, SignatureHash> by_signature;
  for (uint32_t p = 0; p < d.positions.size(); ++p) {
    if (d.positions[p].kind != PosKind::kClass || !reachable[d.positions[p].rule]) continue;
    const auto [it, added] = by_signature.emplace(signer.position(p), static_cast<int32_t>(d.token_sets.size()));
    if (added) {
      d.token_sets.emplace_back();
      d.set_position.push_back(p);
    }
    d.token_set_of[p] = it->second;
    ++d.stats.n_positions;
  }
  return Status::ok_status();
}

// Sorts every matchable token into accepted / rejected / uncertain at position p.
void classify_position(const CompiledData& d, uint32_t p, TrieWalker& walker, std::vector<Node>& nodes,
                       PositionTokens& out) {
  const VocabIndex& vocab = *d.vocab;
  StepResult start;
  start.tops.push_back(Top{p, 0, kMarker, 0});
  nodes.clear();
  std::vector<int32_t> accepted;
  std::vector<int32_t> uncertain;
  auto on_token = [&](int32_t idx, const StepResult* end) {
    if (end->overflow) {
      uncertain.push_back(idx);
      return;
    }
    bool clean = end->clean_end;
    bool escaped = end->escaped_end;
    for (const Top& t : end->tops) {
      if (t.flags & kEscaped) {
        escaped = true;
      } else {
        clean = true;
        break;
      }
    }
    if (clean) {
      accepted.push_back(vocab.sorted_tokens()[idx]);
    } else if (escaped) {
      uncertain.push_back(idx);
    }
  };
  auto on_dead = [&](int32_t begin, int32_t end, const StepResult* at) {
    if (!at->overflow) return;  // rejected
    for (int32_t i = begin; i < end; ++i) uncertain.push_back(i);
  };
  walker.walk_range(start, 0, static_cast<int32_t>(vocab.sorted_tokens().size()), on_token, on_dead);
  std::sort(accepted.begin(), accepted.end());
  const size_t words = bitmask_words(vocab.n_vocab());
  if (accepted.size() > words) {
    out.accepted_bits.assign(words, 0);
    for (int32_t id : accepted) out.accepted_bits[id / 32] |= 1u << (id % 32);
  } else {
    out.accepted = std::move(accepted);
  }
  out.uncertain = std::move(uncertain);
}

}  // namespace

Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const Grammar& grammar,
                                                                 std::shared_ptr<const VocabIndex> vocab) {
  const auto t0 = std::chrono::steady_clock::now();
  PAGODA_TRY(grammar.validate());
  if (!vocab) vocab = VocabIndex::create({}, {});
  auto d = std::make_unique<CompiledData>();
  d->grammar = grammar;
  d->vocab = std::move(vocab);
  PAGODA_TRY(build_tables(*d));

  const std::vector<uint32_t>& todo = d->set_position;
  if (!d->vocab->sorted_tokens().empty()) {
    // Positions are independent: spread them over threads when there is enough work.
    const size_t work = todo.size() * d->vocab->sorted_tokens().size();
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const unsigned n_threads = work < (size_t{1} << 20) ? 1u : std::min<unsigned>(hw, 16);
    std::atomic<size_t> next{0};
    std::mutex depth_mutex;
    auto worker = [&]() {
      std::vector<Node> nodes;
      TrieWalker walker(*d, nodes, /*lookahead=*/true);
      for (size_t i; (i = next.fetch_add(1)) < todo.size();) {
        classify_position(*d, todo[i], walker, nodes, d->token_sets[i]);
      }
      std::lock_guard<std::mutex> lock(depth_mutex);
      d->max_local_depth = std::max(d->max_local_depth, walker.stepper().max_depth());
    };
    if (n_threads == 1) {
      worker();
    } else {
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < n_threads; ++t) threads.emplace_back(worker);
      for (std::thread& t : threads) t.join();
    }
  }

  CompileStats& st = d->stats;
  st.n_classified = static_cast<int32_t>(todo.size());
  const int64_t n_matchable = static_cast<int64_t>(d->vocab->sorted_tokens().size());
  for (const PositionTokens& s : d->token_sets) {
    int64_t acc = static_cast<int64_t>(s.accepted.size());
    if (!s.accepted_bits.empty()) {
      acc = 0;
      for (uint32_t w : s.accepted_bits) acc += __builtin_popcount(w);
    }
    st.n_accepted += acc;
    st.n_uncertain += static_cast<int64_t>(s.uncertain.size());
    st.n_rejected += n_matchable - acc - static_cast<int64_t>(s.uncertain.size());
    st.max_uncertain = std::max<int32_t>(st.max_uncertain, static_cast<int32_t>(s.uncertain.size()));
  }
  st.max_stack_growth = static_cast<int32_t>(d->max_local_depth);
  st.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<const CompiledGrammar>(std::make_shared<CompiledGrammar>(std::move(d)));
}

}  // namespace pagoda::grammar
