#pragma once
// Which positions of a compiled grammar get the same token sets: the compiler classifies
// the vocabulary once per distinct signature (compiled_grammar.cpp).

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar_internal.h"
#include "grammar/repetition_chain.h"

namespace pagoda::grammar::detail {

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
};
struct SignatureHash {
  size_t operator()(const Signature& s) const { return static_cast<size_t>(s.a ^ (s.b << 1)); }
};

class PositionSigner {
 public:
  PositionSigner(const CompiledData& d, int32_t max_chars, const RepetitionLevels& repetitions)
      : d_(d), max_chars_(max_chars), rep_(repetitions) {
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
    seq_memo_.reserve(std::min<size_t>(d.positions.size() * 16, size_t{1} << 20));
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
    // In a repetition's level: from here to the bottom is `levels_to_bottom` levels,
    // each like the top's; more than depth + 1 look alike (the bottom is out of sight).
    if (!top && rep_.top_copy[pos] != kNoPosition) {
      return chain_signature(0xC1, rep_.top_copy[pos], rep_.levels_to_bottom[pos], depth + 2, depth);
    }
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
    if (!d_.alt_starts[r].empty()) {
      const uint32_t first = d_.alt_starts[r][0];
      if (rep_.top_copy[first] != kNoPosition) {
        return chain_signature(0xD1, rep_.top_copy[first], rep_.levels_to_bottom[first], depth + 1, depth);
      }
    }
    const uint64_t key = static_cast<uint64_t>(r) * static_cast<uint64_t>(max_chars_ + 1) + static_cast<uint64_t>(depth);
    auto it = rule_memo_.find(key);
    if (it != rule_memo_.end()) return it->second;
    Signature s;
    s.feed(0xD0);
    for (uint32_t start : d_.alt_starts[r]) s.feed(sequence(start, depth, false));
    rule_memo_.emplace(key, s);
    return s;
  }

  // A repetition's level (or a position in one, `at` the same position in its top
  // level), seen `depth` characters on, `levels` from the bottom: the levels are alike,
  // so that is all there is to it; past `alike` levels the bottom is out of sight.
  static Signature chain_signature(uint64_t tag, uint32_t at, int32_t levels, int32_t alike, int32_t depth) {
    Signature s;
    s.feed(tag);
    s.feed(at);
    s.feed(static_cast<uint64_t>(std::min(levels, alike)));
    s.feed(static_cast<uint64_t>(depth));
    return s;
  }

  const CompiledData& d_;
  int32_t max_chars_;
  const RepetitionLevels& rep_;
  std::vector<Signature> follow_;
  std::vector<int32_t> min_chars_;  // per rule
  std::unordered_map<uint64_t, Signature> seq_memo_;
  std::unordered_map<uint64_t, Signature> rule_memo_;
};

}  // namespace pagoda::grammar::detail
