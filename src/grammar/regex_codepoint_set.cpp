#include "grammar/regex_codepoint_set.h"

#include <algorithm>
#include <cstdio>

namespace pagoda::grammar {

CodepointSet CodepointSet::of(uint32_t first, uint32_t last) {
  CodepointSet set;
  set.add(first, last);
  return set;
}

void CodepointSet::add(uint32_t first, uint32_t last) {
  if (first > last) return;
  // Merge with every range that overlaps or touches [first, last].
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  merged.reserve(ranges_.size() + 1);
  bool placed = false;
  for (const auto& [lo, hi] : ranges_) {
    if (hi + 1 < first) {
      merged.emplace_back(lo, hi);
    } else if (last + 1 < lo) {
      if (!placed) merged.emplace_back(first, last);
      placed = true;
      merged.emplace_back(lo, hi);
    } else {
      first = std::min(first, lo);
      last = std::max(last, hi);
    }
  }
  if (!placed) merged.emplace_back(first, last);
  ranges_ = std::move(merged);
}

void CodepointSet::add(const CodepointSet& other) {
  for (const auto& [lo, hi] : other.ranges_) add(lo, hi);
}

CodepointSet CodepointSet::complement() const {
  CodepointSet out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : ranges_) {
    if (lo > next) out.ranges_.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.ranges_.emplace_back(next, kMaxCodepoint);
  return out;
}

CodepointSet CodepointSet::intersect(const CodepointSet& other) const {
  CodepointSet outside = complement();
  outside.add(other.complement());
  return outside.complement();
}

CodepointSet CodepointSet::minus(const CodepointSet& other) const {
  return intersect(other.complement());
}

bool CodepointSet::contains(uint32_t codepoint) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), codepoint,
                             [](uint32_t c, const auto& range) { return c < range.first; });
  return it != ranges_.begin() && std::prev(it)->second >= codepoint;
}

std::string gbnf_escape_codepoint(uint32_t codepoint, bool in_class) {
  switch (codepoint) {
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\\': return "\\\\";
    default: break;
  }
  char buffer[16];
  if (codepoint < 0x20 || codepoint == 0x7F) {
    std::snprintf(buffer, sizeof buffer, "\\x%02X", codepoint);
    return buffer;
  }
  if (codepoint < 0x7F) {
    const char c = static_cast<char>(codepoint);
    const bool reserved = in_class ? (c == ']' || c == '[' || c == '^' || c == '-') : c == '"';
    return reserved ? std::string{'\\', c} : std::string{c};
  }
  if (codepoint <= 0xFFFF) {
    std::snprintf(buffer, sizeof buffer, "\\u%04X", codepoint);
  } else {
    std::snprintf(buffer, sizeof buffer, "\\U%08X", codepoint);
  }
  return buffer;
}

namespace {

std::string class_body(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::string body;
  for (const auto& [lo, hi] : ranges) {
    body += gbnf_escape_codepoint(lo, /*in_class=*/true);
    if (hi == lo) continue;
    if (hi > lo + 1) body += '-';
    body += gbnf_escape_codepoint(hi, /*in_class=*/true);
  }
  return body;
}

}  // namespace

std::string CodepointSet::to_gbnf_class() const {
  if (ranges_.empty()) return {};
  // Sets made by negation ([^"], \D, .) reach the last code point: their complement
  // is the short list.
  if (ranges_.back().second == kMaxCodepoint) {
    const CodepointSet negated = complement();
    if (negated.empty()) return "[\\x00-\\U0010FFFF]";
    std::string out = "[^";
    out += class_body(negated.ranges_);
    return out + "]";
  }
  std::string out = "[";
  out += class_body(ranges_);
  return out + "]";
}

}  // namespace pagoda::grammar
