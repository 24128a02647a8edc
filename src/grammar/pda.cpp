// The pushdown automaton's byte step (compiled_grammar_internal.h).

#include <algorithm>

#include "grammar/compiled_grammar_internal.h"

namespace pagoda::grammar::detail {
namespace {

// Top::partial: the bits of a partial UTF-8 character read so far (bits 0-20), the
// continuation bytes still to come (bits 24-25) and the sequence length (bits 28-30).
constexpr uint32_t partial_value(uint32_t p) { return p & 0x1FFFFF; }
constexpr uint32_t partial_remaining(uint32_t p) { return (p >> 24) & 3; }
constexpr uint32_t partial_length(uint32_t p) { return (p >> 28) & 7; }
constexpr uint32_t make_partial(uint32_t value, uint32_t remaining, uint32_t length) {
  return value | (remaining << 24) | (length << 28);
}

constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
constexpr uint32_t kMaxForLength[5] = {0, 0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

}  // namespace

bool CharClassData::contains_any(uint32_t lo, uint32_t hi) const {
  // The first range ending at or after lo.
  auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                             [](const CharRange& r, uint32_t v) { return r.last < v; });
  return it != ranges.end() && it->first <= hi;
}

void Stepper::begin_step(StepResult& out) {
  out.clear();
  ++gen_;
  visited_count_ = 0;
  small_n_ = 0;
  spilled_ = false;
  budget_ = max_closure_steps_;
  local_budget_ = kLocalMaxClosureSteps;
}

void Stepper::initial(StepResult& out) {
  begin_step(out);
  for (uint32_t s : g_->alt_starts[g_->root]) closure(s, kBottom, 0, out);
  if (static_cast<int32_t>(out.tops.size()) > max_stacks_) out.overflow = true;
  dedupe(out.tops);
}

void Stepper::escape(int32_t rule, StepResult& out) {
  begin_step(out);
  out.escaped_end = g_->may_end_sentence[rule];
  for (uint32_t f : g_->follow[rule]) {
    closure(f, kMarker, kEscaped, out);
    if (out.overflow) return;
  }
  out.pushed = static_cast<int32_t>(out.tops.size());
  out.closure_steps = max_closure_steps_ - budget_;
  dedupe(out.tops);
}

bool Stepper::visit(uint64_t key) {
  // Most steps visit a handful of keys: a linear scan, then a hash set.
  if (!spilled_) {
    for (int i = 0; i < small_n_; ++i) {
      if (small_[i] == key) return false;
    }
    if (small_n_ < kSmallVisited) {
      small_[small_n_++] = key;
      return true;
    }
    spilled_ = true;
    for (int i = 0; i < small_n_; ++i) visit_hashed(small_[i]);
  }
  return visit_hashed(key);
}

bool Stepper::visit_hashed(uint64_t key) {
  if (visited_.size() < 64) {
    visited_.assign(64, 0);
    visited_gen_.assign(64, 0);
  }
  if ((visited_count_ + 1) * 2 > visited_.size()) {
    // Grow, keeping this step's keys.
    std::vector<uint64_t> old_keys;
    for (size_t i = 0; i < visited_.size(); ++i) {
      if (visited_gen_[i] == gen_) old_keys.push_back(visited_[i]);
    }
    visited_.assign(visited_.size() * 2, 0);
    visited_gen_.assign(visited_.size(), 0);
    visited_count_ = 0;
    for (uint64_t k : old_keys) visit_hashed(k);
  }
  const size_t mask = visited_.size() - 1;
  for (size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
    if (visited_gen_[i] != gen_) {
      visited_gen_[i] = gen_;
      visited_[i] = key;
      ++visited_count_;
      return true;
    }
    if (visited_[i] == key) return false;
  }
}

int32_t Stepper::push_node(uint32_t pos, int32_t parent) {
  const uint64_t below = parent >= 0 ? (*nodes_)[parent].hash : static_cast<uint64_t>(static_cast<int64_t>(parent));
  const uint32_t depth = parent >= 0 ? (*nodes_)[parent].depth + 1 : 1;
  max_depth_ = std::max(max_depth_, depth);
  nodes_->push_back(Node{pos, parent, depth, mix64(below * 0x9E3779B97F4A7C15ULL + pos + 1)});
  return static_cast<int32_t>(nodes_->size()) - 1;
}

void Stepper::closure(uint32_t start, int32_t start_parent, uint32_t start_flags, StepResult& out) {
  work_.clear();
  work_.push_back({start, start_parent, start_flags});
  while (!work_.empty()) {
    const Work w = work_.back();
    work_.pop_back();
    if (--budget_ < 0 || (lookahead_ && (w.flags & kEscaped) == 0 && --local_budget_ < 0)) {
      out.overflow = true;
      return;
    }
    const Position& p = g_->positions[w.pos];
    switch (p.kind) {
      case PosKind::kClass:
        out.tops.push_back(Top{w.pos, 0, w.parent, w.flags});
        break;
      case PosKind::kRef: {
        // The same expansion on the same stack was done already in this step.
        if (!visit((uint64_t{1} << 62) | (uint64_t{w.flags & 1} << 61) | (uint64_t{w.pos} << 32) |
                   static_cast<uint32_t>(w.parent))) {
          break;
        }
        const uint32_t ret = w.pos + 1;
        int32_t parent = w.parent;
        if (g_->positions[ret].kind != PosKind::kEnd) {
          if (parent >= 0 && (*nodes_)[parent].depth >= static_cast<uint32_t>(GrammarMatcher::kMaxStackDepth)) {
            out.overflow = true;
            return;
          }
          parent = push_node(ret, parent);
        }
        const std::vector<uint32_t>& starts = g_->alt_starts[p.arg];
        for (auto it = starts.rbegin(); it != starts.rend(); ++it) work_.push_back({*it, parent, w.flags});
        break;
      }
      case PosKind::kEnd:
        if (w.parent >= 0) {
          if (!visit((uint64_t{2} << 62) | (uint64_t{w.flags & 1} << 61) | static_cast<uint32_t>(w.parent))) break;
          const Node& n = (*nodes_)[w.parent];
          work_.push_back({n.pos, n.parent, w.flags});
        } else if (w.parent == kBottom) {
          out.can_terminate = true;
        } else {  // kMarker: the classified position's rule ended
          if ((w.flags & kEscaped) == 0) out.clean_end = true;
          if (!lookahead_) break;
          if (!visit((uint64_t{3} << 62) | (uint64_t{w.flags & 1} << 61) | static_cast<uint32_t>(p.rule))) break;
          if (end_levels_) {
            out.clean_end_level = std::min(out.clean_end_level, end_levels_[w.pos]);
            ++out.clean_end_rules;
            break;
          }
          if (g_->may_end_sentence[p.rule]) out.escaped_end = true;
          for (uint32_t f : g_->follow[p.rule]) work_.push_back({f, kMarker, kEscaped});
        }
        break;
    }
  }
}

void Stepper::step(const std::vector<Top>& in, uint8_t byte, StepResult& out) {
  begin_step(out);
  for (const Top& t : in) {
    const CharClassData& cls = g_->classes[g_->positions[t.pos].arg];
    if (t.partial == 0) {
      if (((cls.first_byte[byte >> 6] >> (byte & 63)) & 1) == 0) continue;
      if (byte < 0x80) {
        closure(t.pos + 1, t.parent, t.flags, out);
      } else {
        const uint32_t len = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2;
        const uint32_t value = byte & (0x7F >> len);
        out.tops.push_back(Top{t.pos, make_partial(value, len - 1, len), t.parent, t.flags});
      }
    } else {
      if ((byte & 0xC0) != 0x80) continue;
      const uint32_t value = (partial_value(t.partial) << 6) | (byte & 0x3F);
      const uint32_t remaining = partial_remaining(t.partial) - 1;
      const uint32_t len = partial_length(t.partial);
      const uint32_t shift = 6 * remaining;
      const uint32_t lo = std::max(value << shift, kMinForLength[len]);
      const uint32_t hi = std::min((value << shift) | ((1u << shift) - 1), kMaxForLength[len]);
      if (lo > hi || !cls.contains_any(lo, hi)) continue;
      if (remaining == 0) {
        closure(t.pos + 1, t.parent, t.flags, out);
      } else {
        out.tops.push_back(Top{t.pos, make_partial(value, remaining, len), t.parent, t.flags});
      }
    }
    if (out.overflow) return;
  }
  if (static_cast<int32_t>(out.tops.size()) > max_stacks_) {
    out.overflow = true;
    return;
  }
  if (lookahead_) {
    out.pushed = static_cast<int32_t>(out.tops.size());
    out.closure_steps = max_closure_steps_ - budget_;
    // The paths below the classified top only serve to reject tokens early; where they
    // fan out over much of the grammar they cost more than they decide: the token is
    // left to the run-time check instead.
    int32_t escaped = 0;
    for (const Top& t : out.tops) escaped += (t.flags & kEscaped) != 0;
    if (escaped > kMaxEscapedTops) {
      out.overflow = true;
      return;
    }
    int32_t clean = 0;
    for (const Top& t : out.tops) clean += (t.flags & kEscaped) == 0;
    if (clean > kLocalMaxStacks) {
      out.overflow = true;
      return;
    }
  }
  dedupe(out.tops);
}

uint64_t Stepper::top_hash(const Top& t) const {
  return t.parent >= 0 ? (*nodes_)[t.parent].hash : static_cast<uint64_t>(static_cast<int64_t>(t.parent));
}

bool Stepper::same_stack(int32_t a, int32_t b) const {
  while (a != b) {
    if (a < 0 || b < 0) return false;
    const Node& na = (*nodes_)[a];
    const Node& nb = (*nodes_)[b];
    if (na.pos != nb.pos || na.hash != nb.hash || na.depth != nb.depth) return false;
    a = na.parent;
    b = nb.parent;
  }
  return true;
}

void Stepper::dedupe(std::vector<Top>& tops) const {
  const size_t n = tops.size();
  if (n < 2) return;
  auto same_key = [](const Top& a, const Top& b) {
    return a.pos == b.pos && a.partial == b.partial && a.flags == b.flags;
  };
  if (n <= 16) {
    // Few tops: compare pairs; stacks are compared only under equal tops.
    size_t out = 0;
    for (size_t i = 0; i < n; ++i) {
      bool dup = false;
      for (size_t j = 0; j < out && !dup; ++j) {
        dup = same_key(tops[j], tops[i]) && top_hash(tops[j]) == top_hash(tops[i]) &&
              same_stack(tops[j].parent, tops[i].parent);
      }
      if (!dup) tops[out++] = tops[i];
    }
    tops.resize(out);
    return;
  }
  // Many tops: a hash table of the kept ones, stacks compared under equal hashes.
  thread_local std::vector<int32_t> table;
  size_t cap = 64;
  while (cap < 2 * n) cap <<= 1;
  table.assign(cap, -1);
  size_t out = 0;
  for (size_t i = 0; i < n; ++i) {
    const Top t = tops[i];
    const uint64_t h = mix64(top_hash(t) ^ (uint64_t{t.pos} << 20) ^ (uint64_t{t.partial} << 1) ^ t.flags);
    bool dup = false;
    size_t slot = h & (cap - 1);
    for (; table[slot] >= 0; slot = (slot + 1) & (cap - 1)) {
      const Top& o = tops[table[slot]];
      if (same_key(o, t) && top_hash(o) == top_hash(t) && same_stack(o.parent, t.parent)) {
        dup = true;
        break;
      }
    }
    if (dup) continue;
    tops[out] = t;
    table[slot] = static_cast<int32_t>(out);
    ++out;
  }
  tops.resize(out);
}

}  // namespace pagoda::grammar::detail
