#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

#include "grammar/compiled_grammar_internal.h"

namespace pagoda::grammar {

using namespace detail;

namespace {

// Per-thread scratch of the const mask computation (a matcher is used by one thread at a
// time, so one set per thread serves every matcher).

void set_bit(std::span<uint32_t> mask, int32_t id) { mask[id / 32] |= 1u << (id % 32); }

// By position, so that the mask visits each top position's sets once.
void sort_tops(std::vector<Top>& tops) {
  std::sort(tops.begin(), tops.end(), [](const Top& a, const Top& b) { return a.pos < b.pos; });
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar) : grammar_(std::move(grammar)) {
  reset();
}

void GrammarMatcher::reset() {
  nodes_.clear();
  history_.clear();
  Stepper stepper(grammar_->data(), nodes_, /*lookahead=*/false);
  StepResult r;
  stepper.initial(r);
  state_ = State{};
  state_.tops = std::move(r.tops);
  state_.can_terminate = r.can_terminate;
  sort_tops(state_.tops);
  live_nodes_ = nodes_.size();
}

bool GrammarMatcher::can_terminate() const { return !state_.terminated && state_.can_terminate; }
bool GrammarMatcher::is_completed() const { return state_.terminated || (state_.can_terminate && state_.tops.empty()); }
bool GrammarMatcher::is_terminated() const { return state_.terminated; }

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  exceeded_bounds_ = false;
  if (state_.terminated) return false;
  const size_t saved_nodes = nodes_.size();
  thread_local Stepper stepper;
  thread_local StepResult a;
  thread_local StepResult b;
  stepper.bind(grammar_->data(), nodes_, /*lookahead=*/false);
  a.clear();
  a.tops = state_.tops;
  a.can_terminate = state_.can_terminate;
  for (const char c : bytes) {
    if (a.tops.empty()) {
      nodes_.resize(saved_nodes);
      return false;
    }
    stepper.step(a.tops, static_cast<uint8_t>(c), b);
    if (b.overflow) {
      nodes_.resize(saved_nodes);
      exceeded_bounds_ = true;
      return false;
    }
    std::swap(a, b);
  }
  if (a.tops.empty() && !a.can_terminate) {
    nodes_.resize(saved_nodes);
    return false;
  }
  if (static_cast<int32_t>(history_.size()) >= kMaxRollback) history_.erase(history_.begin());
  history_.push_back(std::move(state_));
  state_ = State{};
  state_.tops = std::move(a.tops);
  state_.can_terminate = a.can_terminate;
  sort_tops(state_.tops);
  if (nodes_.size() > 4096 && nodes_.size() > 4 * live_nodes_) compact_nodes();
  return true;
}

bool GrammarMatcher::accept_token(int32_t token) {
  exceeded_bounds_ = false;
  const VocabIndex& vocab = grammar_->vocab();
  if (token < 0 || token >= vocab.n_vocab() || state_.terminated) return false;
  if (vocab.is_stop_token(token)) {
    if (!state_.can_terminate) return false;
    if (static_cast<int32_t>(history_.size()) >= kMaxRollback) history_.erase(history_.begin());
    history_.push_back(state_);
    state_.terminated = true;
    return true;
  }
  const std::string_view bytes = vocab.token_bytes(token);
  if (bytes.empty()) return false;
  return accept_bytes(bytes);
}

void GrammarMatcher::rollback(int32_t n_tokens) {
  if (n_tokens <= 0) return;
  const size_t n = std::min<size_t>(static_cast<size_t>(n_tokens), history_.size());
  if (n == 0) return;
  state_ = std::move(history_[history_.size() - n]);
  history_.resize(history_.size() - n);
}

void GrammarMatcher::compact_nodes() {
  // Mark the nodes the current state and the history reach, then renumber them in order
  // (a node's parent always comes before it, so order is kept).
  std::vector<int32_t> remap(nodes_.size(), -1);
  auto mark = [&](const State& s) {
    for (const Top& t : s.tops) {
      for (int32_t n = t.parent; n >= 0 && remap[n] != 0; n = nodes_[n].parent) remap[n] = 0;
    }
  };
  mark(state_);
  for (const State& s : history_) mark(s);
  int32_t next = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (remap[i] == 0) {
      Node n = nodes_[i];
      if (n.parent >= 0) n.parent = remap[n.parent];
      nodes_[next] = n;
      remap[i] = next++;
    }
  }
  nodes_.resize(static_cast<size_t>(next));
  auto fix = [&](State& s) {
    for (Top& t : s.tops) {
      if (t.parent >= 0) t.parent = remap[t.parent];
    }
  };
  fix(state_);
  for (State& s : history_) fix(s);
  live_nodes_ = nodes_.size();
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> bitmask) const {
  std::fill(bitmask.begin(), bitmask.end(), 0u);
  if (state_.terminated) return;
  const CompiledData& d = grammar_->data();
  const VocabIndex& vocab = *d.vocab;
  const size_t words = std::min(bitmask.size(), bitmask_words(vocab.n_vocab()));
  std::span<uint32_t> mask = bitmask.first(words);
  if (words < bitmask_words(vocab.n_vocab())) return;  // too small: allow nothing

  if (state_.can_terminate) {
    for (int32_t id : vocab.stop_token_ids()) set_bit(mask, id);
  }
  if (state_.tops.empty()) return;

  thread_local std::vector<int32_t> candidates;
  thread_local std::vector<int32_t> merged;
  candidates.clear();
  thread_local StepResult start;
  start.tops = state_.tops;
  start.can_terminate = state_.can_terminate;

  bool partial = false;
  uint32_t depth = 0;
  for (const Top& t : state_.tops) {
    partial = partial || t.partial != 0;
    if (t.parent >= 0) depth = std::max(depth, nodes_[t.parent].depth);
  }
  const bool exact = static_cast<int32_t>(state_.tops.size()) > kSafeTops ||
                     static_cast<int64_t>(depth) + d.max_local_depth + 1 >= kMaxStackDepth;
  thread_local TrieWalker walker;
  walker.bind(d, nodes_, /*lookahead=*/false);
  auto set_if_alive = [&](int32_t idx, const StepResult* end) {
    if (end != nullptr && !end->overflow && (!end->tops.empty() || end->can_terminate)) {
      set_bit(mask, vocab.sorted_tokens()[idx]);
    }
  };
  auto ignore_dead = [](int32_t, int32_t, const StepResult*) {};
  if (exact || partial) {
    // Beyond what the precomputed sets vouch for, or mid-character (where only tokens
    // starting with a continuation byte survive the first level): every token checked.
    walker.walk_range(start, 0, static_cast<int32_t>(vocab.sorted_tokens().size()), set_if_alive, ignore_dead);
    return;
  } else {
    // Tops are sorted by position: each distinct position adds its precomputed sets.
    bool first = true;
    uint32_t last_pos = UINT32_MAX;
    size_t n_lists = 0;
    const std::vector<int32_t>* only = nullptr;
    for (const Top& t : state_.tops) {
      if (t.pos == last_pos) continue;
      last_pos = t.pos;
      const int32_t si = d.token_set_of[t.pos];
      if (si < 0) continue;
      const PositionTokens& s = d.token_sets[si];
      if (!s.accepted_bits.empty()) {
        if (first && !state_.can_terminate) {
          std::memcpy(mask.data(), s.accepted_bits.data(), words * sizeof(uint32_t));
        } else {
          for (size_t w = 0; w < words; ++w) mask[w] |= s.accepted_bits[w];
        }
      } else {
        for (int32_t id : s.accepted) set_bit(mask, id);
      }
      first = false;
      if (!s.uncertain.empty()) {
        if (n_lists == 0) {
          only = &s.uncertain;
        } else {
          if (n_lists == 1) candidates.assign(only->begin(), only->end());
          candidates.insert(candidates.end(), s.uncertain.begin(), s.uncertain.end());
        }
        ++n_lists;
      }
    }
    if (n_lists == 1) {
      candidates.assign(only->begin(), only->end());
    } else if (n_lists > 1) {
      std::sort(candidates.begin(), candidates.end());
      candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    }
    // Already accepted through another position: no need to walk.
    if (n_lists > 1) {
      merged.clear();
      for (int32_t idx : candidates) {
        const int32_t id = vocab.sorted_tokens()[idx];
        if (((mask[id / 32] >> (id % 32)) & 1u) == 0) merged.push_back(idx);
      }
      candidates.swap(merged);
    }
  }
  if (candidates.empty()) return;
  walker.walk_list(start, candidates, set_if_alive);
}

}  // namespace pagoda::grammar
