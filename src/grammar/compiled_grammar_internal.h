#pragma once
// The compiled grammar's tables and the pushdown-automaton stepping both the compiler
// (to classify tokens per position) and the matcher use.
//
// Positions: the grammar's alternatives laid end to end, each element one position and
// each alternative followed by an end position. A stack is a character-class position
// on top (with a partial UTF-8 character) over a chain of return positions (Nodes in an
// arena). Expanding a reference pushes the position after it, unless that position is
// an alternative's end (so right recursion does not grow the stack).

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/mix64.h"
#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"

namespace pagoda::grammar::detail {

using Node = GrammarMatcher::Node;
using Top = GrammarMatcher::Top;

enum class PosKind : uint8_t { kClass, kRef, kEnd };

struct Position {
  PosKind kind;
  int32_t arg;   // kClass: class index; kRef: the rule referenced; kEnd: unused
  int32_t rule;  // the rule whose alternative holds this position
};

// A character class as code point ranges: sorted, disjoint, negation resolved, no
// surrogates (they are not characters in UTF-8).
struct CharClassData {
  std::vector<CharRange> ranges;
  uint64_t first_byte[4] = {0, 0, 0, 0};  // bytes that can start a character of the class
  bool contains_any(uint32_t lo, uint32_t hi) const;  // some code point in [lo, hi]
};

// The tokens a character-class position accepts whatever the stack below it, as a list
// or (when that is smaller) a bitmask, and the tokens to check at run time.
struct PositionTokens {
  std::vector<int32_t> accepted;          // token ids, ascending (when bits is empty)
  std::vector<uint32_t> accepted_bits;    // bitmask_words(n_vocab) words, or empty
  std::vector<int32_t> uncertain;         // indices into VocabIndex::sorted_tokens(), ascending
  friend bool operator==(const PositionTokens&, const PositionTokens&) = default;
};

// Parent values below a stack's lowest node.
constexpr int32_t kBottom = -1;  // the grammar's root: popping it ends the sentence
constexpr int32_t kMarker = -2;  // compiler only: whatever lies below the classified position

constexpr uint32_t kEscaped = 1;  // Top::flags: the path went below kMarker

// A state of at most kSafeTops tops uses the precomputed token sets. The compiler
// counts a token accepted only when its paths that stay above the classified top keep
// within the matcher's bounds divided by kSafeTops (else it leaves the token to the
// run-time check), which keeps a state from overflowing on an accepted token in all but
// grammars whose paths below the top explode too (GrammarMatcher::exceeded_bounds()). A
// larger state (or one near kMaxStackDepth) checks every token at run time.
constexpr int32_t kSafeTops = 256;
constexpr int32_t kLocalMaxStacks = GrammarMatcher::kMaxStacks / kSafeTops;
// The compiler's paths below the classified top, per byte: more, and the token is left
// to the run-time check.
constexpr int32_t kMaxEscapedTops = 1024;
constexpr int32_t kLocalMaxClosureSteps = GrammarMatcher::kMaxClosureSteps / kSafeTops;

struct CompiledData {
  Grammar grammar;  // as given (unproductive alternatives kept: to_gbnf shows the input)
  std::shared_ptr<const VocabIndex> vocab;
  CompileStats stats;

  std::vector<Position> positions;
  std::vector<CharClassData> classes;
  std::vector<std::vector<uint32_t>> alt_starts;  // per rule
  int32_t root = 0;
  // Compiler only: per rule, the positions that may follow its end anywhere in the
  // grammar, and whether its end may be the end of the sentence.
  std::vector<std::vector<uint32_t>> follow;
  std::vector<char> may_end_sentence;

  std::vector<int32_t> token_set_of;  // per position: index into token_sets, -1 when none
  uint32_t max_local_depth = 0;       // deepest stack growth in the compiler's walks
  std::vector<PositionTokens> token_sets;
  std::vector<uint32_t> set_position;  // per token set: the position it was classified at
};

// StepResult::clean_end_level when no path popped kMarker cleanly.
constexpr int32_t kNoLevel = INT32_MAX;

// How compile_grammar classifies; tests compare the ways.
struct CompileOptions {
  // A bounded repetition's copies of an element classified by one walk
  // (repetition_chain.h); false: by one walk per distinct copy, as other positions.
  bool derive_repetitions = true;
  // Positions whose walks cannot differ share a set (position_signature.h); false: one
  // walk per position.
  bool share_alike_positions = true;
};
Expected<std::shared_ptr<const CompiledGrammar>> compile_grammar(const Grammar& grammar,
                                                                 std::shared_ptr<const VocabIndex> vocab,
                                                                 const CompileOptions& options);

// The tops a byte (or a closure) leads to.
struct StepResult {
  std::vector<Top> tops;
  bool can_terminate = false;  // a path popped kBottom
  bool clean_end = false;      // compiler: a path not escaped popped kMarker
  bool escaped_end = false;    // compiler: an escaped path could end the sentence
  bool overflow = false;       // a bound was hit: the result is not to be trusted
  // Compiler, with Stepper::set_end_levels: the least level of the ends at which a path
  // popped kMarker (kNoLevel: none did), and how many rules' ends did.
  int32_t clean_end_level = kNoLevel;
  int32_t clean_end_rules = 0;
  // Lookahead: the tops pushed before duplicates were removed, the closure steps taken.
  int32_t pushed = 0;
  int32_t closure_steps = 0;
  void clear() {
    tops.clear();
    can_terminate = clean_end = escaped_end = overflow = false;
    clean_end_level = kNoLevel;
    clean_end_rules = pushed = closure_steps = 0;
  }
};

// Steps stacks over bytes. Not thread safe; one per thread. Nodes go to `nodes`.
class Stepper {
 public:
  // The compiler's walks (lookahead) classify one top at a time: their paths that stay
  // above kMarker (the ones the matcher will follow too) are held to the local bounds,
  // so that a token they accept cannot make a state of up to kSafeTops tops overflow the
  // matcher's bounds.
  Stepper() = default;
  Stepper(const CompiledData& g, std::vector<Node>& nodes, bool lookahead) { bind(g, nodes, lookahead); }
  void bind(const CompiledData& g, std::vector<Node>& nodes, bool lookahead) {
    g_ = &g;
    nodes_ = &nodes;
    lookahead_ = lookahead;
    max_stacks_ = GrammarMatcher::kMaxStacks;
    max_closure_steps_ = GrammarMatcher::kMaxClosureSteps;
  }

  // The deepest node this stepper made (the compiler's: above kMarker).
  uint32_t max_depth() const { return max_depth_; }
  // Compiler: per position, the level StepResult::clean_end_level reports for a pop of
  // kMarker at that end position (repetition_chain.h). With levels set (not nullptr) the
  // lookahead follows no path below kMarker: the caller follows them (escape()).
  void set_end_levels(const int32_t* levels) { end_levels_ = levels; }
  // The tops a path that left the classified rule `rule` (popped kMarker) starts from:
  // the positions that may follow it, escaped.
  void escape(int32_t rule, StepResult& out);

  // The tops reached from the start of the root rule.
  void initial(StepResult& out);
  // The tops after `byte` from `in` (which must not alias out.tops).
  void step(const std::vector<Top>& in, uint8_t byte, StepResult& out);
  // Adds the tops reachable from position `pos` with `parent` below (out not cleared).
  void closure(uint32_t pos, int32_t parent, uint32_t flags, StepResult& out);
  // Removes stacks equal to another (keeping the first of each, in order).
  void dedupe(std::vector<Top>& tops) const;

 private:
  // Clears `out` and the visited set, and refills the step's budgets.
  void begin_step(StepResult& out);
  bool visit(uint64_t key);  // false when already visited in this step
  bool visit_hashed(uint64_t key);
  int32_t push_node(uint32_t pos, int32_t parent);
  bool same_stack(int32_t a, int32_t b) const;
  uint64_t top_hash(const Top& t) const;

  const CompiledData* g_ = nullptr;
  std::vector<Node>* nodes_ = nullptr;
  bool lookahead_ = false;
  int32_t max_stacks_ = 0;
  int32_t max_closure_steps_ = 0;
  uint32_t max_depth_ = 0;
  const int32_t* end_levels_ = nullptr;
  int32_t budget_ = 0;
  int32_t local_budget_ = 0;  // closure steps of paths not escaped (lookahead only)
  struct Work {
    uint32_t pos;
    int32_t parent;
    uint32_t flags;
  };
  std::vector<Work> work_;
  static constexpr int kSmallVisited = 16;
  uint64_t small_[kSmallVisited] = {};
  int small_n_ = 0;
  bool spilled_ = false;
  std::vector<uint64_t> visited_;
  std::vector<uint32_t> visited_gen_;
  uint32_t gen_ = 0;
  size_t visited_count_ = 0;
};

// Walks tokens in trie order from the tops `start`, sharing the work on common
// prefixes, and calls on_token(sorted_index, end) with the state after the token's last
// byte, or end == nullptr when the token died before it; on_dead(begin, end, state) is
// called instead for a run [begin, end) of sorted indices skipped because their common
// prefix died (`state`: where it died, overflow set when a bound was hit).
//   walk_range: every sorted index in [begin, end) (dead prefixes skipped whole).
//   walk_list:  ascending sorted indices (a few), each walked.
class TrieWalker {
 public:
  TrieWalker() = default;
  TrieWalker(const CompiledData& g, std::vector<Node>& nodes, bool lookahead) { bind(g, nodes, lookahead); }
  void bind(const CompiledData& g, std::vector<Node>& nodes, bool lookahead) {
    g_ = &g;
    nodes_ = &nodes;
    stepper_.bind(g, nodes, lookahead);
  }
  const Stepper& stepper() const { return stepper_; }
  void set_end_levels(const int32_t* levels) { stepper_.set_end_levels(levels); }
  // In on_token: the state after the first d bytes of the token (d up to its length);
  // in walk_list's on_token of a token that died: where it died.
  const StepResult& prefix_state(size_t d) const { return depth_[d]; }
  const StepResult& last_state() const { return depth_[computed_]; }
  // In on_dead: the bytes the run's common prefix lived through.
  size_t computed() const { return computed_; }

  template <typename OnToken, typename OnDead>
  void walk_range(const StepResult& start, int32_t begin, int32_t end, OnToken&& on_token, OnDead&& on_dead);
  template <typename OnToken>
  void walk_list(const StepResult& start, const std::vector<int32_t>& candidates, OnToken&& on_token);

 private:
  void begin_walk(const StepResult& start);
  // Advances from the states shared with the previous token to the end of `t`; returns
  // the depth reached (t.size() when the token lives).
  size_t advance(std::string_view t);

  const CompiledData* g_ = nullptr;
  std::vector<Node>* nodes_ = nullptr;
  Stepper stepper_;
  std::vector<StepResult> depth_;  // depth_[d]: after the first d bytes of the current token
  std::vector<size_t> mark_;       // nodes_->size() when depth_[d] was made
  std::string_view prev_;
  size_t computed_ = 0;  // depth_[0..computed_] hold prev_'s prefixes
};

inline void TrieWalker::begin_walk(const StepResult& start) {
  const size_t max_len = static_cast<size_t>(g_->vocab->max_token_length());
  if (depth_.size() < max_len + 1) depth_.resize(max_len + 1);
  mark_.assign(max_len + 1, 0);
  depth_[0].clear();
  depth_[0].tops = start.tops;
  depth_[0].can_terminate = start.can_terminate;
  mark_[0] = nodes_->size();
  prev_ = {};
  computed_ = 0;
}

inline size_t TrieWalker::advance(std::string_view t) {
  size_t l = 0;
  const size_t lim = std::min({prev_.size(), t.size(), computed_});
  while (l < lim && prev_[l] == t[l]) ++l;
  size_t d = l;
  nodes_->resize(mark_[d]);
  while (d < t.size()) {
    if (depth_[d].tops.empty() || depth_[d].overflow) break;
    stepper_.step(depth_[d].tops, static_cast<uint8_t>(t[d]), depth_[d + 1]);
    ++d;
    mark_[d] = nodes_->size();
  }
  computed_ = d;
  prev_ = t;
  return d;
}

template <typename OnToken, typename OnDead>
void TrieWalker::walk_range(const StepResult& start, int32_t begin, int32_t end, OnToken&& on_token,
                            OnDead&& on_dead) {
  const VocabIndex& vocab = *g_->vocab;
  begin_walk(start);
  for (int32_t idx = begin; idx < end;) {
    const std::string_view t = vocab.sorted_bytes(idx);
    const size_t d = advance(t);
    if (d == t.size()) {
      on_token(idx, static_cast<const StepResult*>(&depth_[d]));
      ++idx;
      continue;
    }
    // The first d bytes of t lead nowhere (or past a bound): so does every token after
    // it that starts with them.
    const int32_t skip_to = std::min(end, vocab.prefix_end(idx, d));
    on_dead(idx, skip_to, static_cast<const StepResult*>(&depth_[d]));
    idx = skip_to;
  }
  nodes_->resize(mark_[0]);
}

template <typename OnToken>
void TrieWalker::walk_list(const StepResult& start, const std::vector<int32_t>& candidates, OnToken&& on_token) {
  const VocabIndex& vocab = *g_->vocab;
  begin_walk(start);
  for (const int32_t idx : candidates) {
    const std::string_view t = vocab.sorted_bytes(idx);
    const size_t d = advance(t);
    on_token(idx, d == t.size() ? static_cast<const StepResult*>(&depth_[d]) : nullptr);
  }
  nodes_->resize(mark_[0]);
}

}  // namespace pagoda::grammar::detail
