#pragma once
// GrammarMatcher: the state of one request (one choice) under a compiled grammar.
//
// A pushdown automaton over bytes: the state is the set of possible stacks (the
// grammar may be ambiguous), each a character-class position on top of the return
// positions below it. Bytes are decoded as UTF-8 for the classes; a token may end in
// the middle of a character, and the partial character is carried to the next token.
// Invalid UTF-8 (overlong forms, surrogates, above U+10FFFF) is never accepted.
//
// The token bitmask combines the sets the compiler precomputed for each top position
// with a walk, in trie order and sharing prefixes, over the few tokens the compiler
// could not decide; after a token that ends mid-character it walks the trie from the
// partial character (only continuation bytes survive its first level).
//
// Bounds (a pathological grammar costs bounded time, it never hangs): a state holds at
// most kMaxStacks stacks and one byte may take at most kMaxClosureSteps expansion
// steps; stacks are at most kMaxStackDepth deep. A byte that would need more is
// rejected: accept_* returns false and exceeded_bounds() says why. The mask is exact
// below the bounds; at them it may allow a token that accept_token then rejects this
// way (the precomputed sets judge one stack at a time), which the caller should treat
// as the grammar being too ambiguous for the text (an error of the request). States of
// more than a few hundred stacks, or deep ones, check every token instead of using the
// precomputed sets, which keeps such cases rare.
//
// Copying is cheap (the compiled grammar is shared; the copy owns the stacks and
// history). A matcher must not be used from two threads at once; copies may.

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"

namespace pagoda::grammar {

class GrammarMatcher {
 public:
  static constexpr int32_t kMaxStacks = 1 << 14;
  static constexpr int32_t kMaxClosureSteps = 1 << 18;
  static constexpr int32_t kMaxStackDepth = 1 << 14;
  // rollback() can undo at most this many accepted tokens (accept_bytes calls count as
  // tokens).
  static constexpr int32_t kMaxRollback = 64;

  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // bitmask: bitmask_words(n_vocab) words (more are zeroed; fewer: all zero); bit
  // (i % 32) of word i / 32 set = token i may come next. Stop tokens are set exactly when
  // can_terminate(); nothing is set once terminated.
  void fill_next_token_bitmask(std::span<uint32_t> bitmask) const;

  // false (and the state unchanged) when not allowed. A stop token is accepted only
  // when can_terminate(), and then is_terminated() becomes true. A token with no bytes
  // (control token) that is not a stop token is never accepted.
  bool accept_token(int32_t token);
  // The same for raw text; UTF-8 may be split across calls. Each successful call is one
  // step of the rollback history (the empty text too).
  bool accept_bytes(std::string_view bytes);

  bool can_terminate() const;  // the bytes so far form a complete sentence (false once terminated)
  bool is_completed() const;   // that, and no further byte can be accepted; true once terminated
  bool is_terminated() const;  // a stop token was accepted
  // The last accept_* that returned false hit a bound (see above), not the grammar.
  bool exceeded_bounds() const { return exceeded_bounds_; }

  // Undoes the last n accepted tokens; n must be at most the number accepted since the
  // construction or reset() and at most kMaxRollback (more undoes what history holds).
  void rollback(int32_t n_tokens);
  // Tokens rollback() can undo now.
  int32_t rollback_depth() const { return static_cast<int32_t>(history_.size()); }
  void reset();

  const CompiledGrammar& grammar() const { return *grammar_; }

  // The matcher's state; internal (matcher.cpp), here so that copies are plain copies.
  struct Node {  // one frame below a stack's top: a return position and the frame below
    uint32_t pos;
    int32_t parent;  // -1: the bottom
    uint32_t depth;  // frames from here down
    uint64_t hash;   // of the positions from here down, for finding equal stacks
  };
  struct Top {  // a stack: a character-class position (with a partial UTF-8 character)
    uint32_t pos;
    uint32_t partial;  // 0, or the partial character (see matcher.cpp)
    int32_t parent;    // node below, -1: none
    uint32_t flags;    // internal (the compiler's walks mark paths here)
  };
  struct State {
    std::vector<Top> tops;
    bool can_terminate = false;
    bool terminated = false;
  };

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  State state_;
  std::vector<State> history_;  // states before each of the last accepted tokens
  mutable std::vector<Node> nodes_;  // the stacks' frames (appended; compacted now and then)
  size_t live_nodes_ = 0;            // nodes_ in use after the last compaction
  bool exceeded_bounds_ = false;

  void compact_nodes();
};

}  // namespace pagoda::grammar
