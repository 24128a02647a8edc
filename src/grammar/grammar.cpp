#include "grammar/grammar.h"

#include <algorithm>
#include <functional>

#include "core/unicode.h"

namespace pagoda::grammar {

Element Element::literal(uint32_t codepoint) {
  Element e;
  e.ranges.push_back({codepoint, codepoint});
  return e;
}

Element Element::char_class(std::vector<CharRange> ranges, bool negated) {
  Element e;
  e.ranges = std::move(ranges);
  e.negated = negated;
  return e;
}

Element Element::any_char() { return char_class({}, true); }

Element Element::rule_ref(int32_t rule) {
  Element e;
  e.kind = Kind::kRuleRef;
  e.rule = rule;
  return e;
}

bool Element::is_literal() const {
  return is_char_class() && !negated && ranges.size() == 1 && ranges[0].first == ranges[0].last;
}

bool Element::matches(uint32_t codepoint) const {
  bool in = false;
  for (const CharRange& r : ranges) {
    if (codepoint >= r.first && codepoint <= r.last) {
      in = true;
      break;
    }
  }
  return in != negated;
}

bool Grammar::is_valid_rule_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string Grammar::sanitize_rule_name(std::string_view name) {
  if (name.empty()) return "rule";
  std::string out(name);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) c = '-';
  }
  return out;
}

int32_t Grammar::add_rule(std::string name) {
  if (!is_valid_rule_name(name) || by_name_.count(name) != 0) return -1;
  const int32_t id = n_rules();
  by_name_.emplace(name, id);
  rules_.push_back(Rule{std::move(name), {}});
  return id;
}

std::string Grammar::unique_rule_name(std::string_view base) const {
  const std::string clean = sanitize_rule_name(base);
  if (by_name_.find(clean) == by_name_.end()) return clean;
  int64_t& next = next_suffix_[clean];
  for (int64_t i = std::max<int64_t>(next, 1);; ++i) {
    std::string name = clean + "-" + std::to_string(i);
    if (by_name_.find(name) == by_name_.end()) {
      next = i;
      return name;
    }
  }
}

int32_t Grammar::add_helper_rule(std::string_view base) { return add_rule(unique_rule_name(base)); }

int32_t Grammar::find_rule(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

bool Grammar::rename_rule(int32_t rule, std::string name) {
  if (!is_valid_rule_name(name)) return false;
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second == rule;
  by_name_.erase(rules_[rule].name);
  by_name_.emplace(name, rule);
  rules_[rule].name = std::move(name);
  return true;
}

void Grammar::add_alternative(int32_t rule, Sequence sequence) { rules_[rule].alternatives.push_back(std::move(sequence)); }

Sequence Grammar::literal_sequence(std::string_view text) {
  Sequence out;
  size_t offset = 0;
  while (offset < text.size()) {
    const int n = utf8_validate_one(text.substr(offset));
    if (n > 0) {
      size_t o = offset;
      out.push_back(Element::literal(decode_utf8(text, o)));
      offset += static_cast<size_t>(n);
    } else {
      out.push_back(Element::literal(kReplacementCharacter));
      offset += n == kUtf8Incomplete ? text.size() - offset : static_cast<size_t>(-n);
    }
  }
  return out;
}

Status Grammar::append_repetition(Sequence& out, std::string_view base_name, std::vector<Sequence> body, int32_t min,
                                  int32_t max) {
  if (min < 0) return invalid_argument("repetition minimum " + std::to_string(min) + " is negative");
  if (max != kUnbounded && max < min) {
    return invalid_argument("repetition maximum " + std::to_string(max) + " is less than the minimum " +
                            std::to_string(min));
  }
  if (min > kMaxRepetition || max > kMaxRepetition) {
    return invalid_argument("repetition count above " + std::to_string(kMaxRepetition));
  }
  if (body.empty()) body.emplace_back();  // nothing to repeat: the empty string
  if (max == 0) return Status::ok_status();

  // The body as one sequence: inline when it is one, else a reference to a helper rule.
  Sequence unit;
  auto make_unit = [&]() {
    if (!unit.empty() || body.size() == 1) {
      if (unit.empty()) unit = body[0];
      return;
    }
    const int32_t g = add_helper_rule(base_name);
    rules_[g].alternatives = body;
    unit.push_back(Element::rule_ref(g));
  };
  auto append_seq = [](Sequence& dst, const Sequence& src) { dst.insert(dst.end(), src.begin(), src.end()); };

  if (max == kUnbounded) {
    // h ::= X1 h | X2 h | ... | (empty)
    const int32_t h = add_helper_rule(base_name);
    std::vector<Sequence> alts;
    for (const Sequence& alt : body) {
      Sequence s = alt;
      s.push_back(Element::rule_ref(h));
      alts.push_back(std::move(s));
    }
    alts.emplace_back();
    rules_[h].alternatives = std::move(alts);
    if (min > 0) {
      if (min == 1 && body.size() > 1) {
        // X+ with several alternatives: p ::= X1 h | X2 h | ...
        const int32_t p = add_helper_rule(base_name);
        for (const Sequence& alt : body) {
          Sequence s = alt;
          s.push_back(Element::rule_ref(h));
          rules_[p].alternatives.push_back(std::move(s));
        }
        out.push_back(Element::rule_ref(p));
        return Status::ok_status();
      }
      make_unit();
      for (int32_t i = 0; i < min; ++i) append_seq(out, unit);
    }
    out.push_back(Element::rule_ref(h));
    return Status::ok_status();
  }

  if (min == 0 && max == 1) {
    // h ::= X1 | X2 | ... | (empty)
    const int32_t h = add_helper_rule(base_name);
    rules_[h].alternatives = body;
    rules_[h].alternatives.emplace_back();
    out.push_back(Element::rule_ref(h));
    return Status::ok_status();
  }

  make_unit();
  for (int32_t i = 0; i < min; ++i) append_seq(out, unit);
  const int32_t optional = max - min;
  if (optional == 0) return Status::ok_status();
  // h(1) ::= X | ; h(k) ::= X h(k-1) | ; created innermost first.
  int32_t inner = -1;
  for (int32_t k = 1; k <= optional; ++k) {
    const int32_t h = add_helper_rule(base_name);
    Sequence s = unit;
    if (inner >= 0) s.push_back(Element::rule_ref(inner));
    rules_[h].alternatives.push_back(std::move(s));
    rules_[h].alternatives.emplace_back();
    inner = h;
  }
  out.push_back(Element::rule_ref(inner));
  return Status::ok_status();
}

Status Grammar::validate() const {
  const int32_t n = n_rules();
  if (root_ < 0 || root_ >= n) return invalid_argument("grammar has no root rule");
  for (const Rule& rule : rules_) {
    if (rule.alternatives.empty()) return invalid_argument("rule '" + rule.name + "' has no alternatives");
    for (const Sequence& alt : rule.alternatives) {
      for (const Element& e : alt) {
        if (e.is_rule_ref()) {
          if (e.rule < 0 || e.rule >= n) {
            return invalid_argument("rule '" + rule.name + "' refers to rule " + std::to_string(e.rule) +
                                    ", which does not exist");
          }
        } else {
          for (const CharRange& r : e.ranges) {
            if (r.first > r.last || r.last > kMaxCodepoint) {
              return invalid_argument("rule '" + rule.name + "' has a character range out of order or above U+10FFFF");
            }
          }
        }
      }
    }
  }

  // Nullable rules (fixed point).
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : rules_[r].alternatives) {
        bool all = true;
        for (const Element& e : alt) {
          if (!e.is_rule_ref() || !nullable[e.rule]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }

  // Left recursion: a cycle in "r can start with s" (s after only nullable elements).
  std::vector<std::vector<int32_t>> starts(n);
  for (int32_t r = 0; r < n; ++r) {
    for (const Sequence& alt : rules_[r].alternatives) {
      for (const Element& e : alt) {
        if (!e.is_rule_ref()) break;
        starts[r].push_back(e.rule);
        if (!nullable[e.rule]) break;
      }
    }
  }
  std::vector<int8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<int32_t> path;
  std::string cycle;
  std::function<bool(int32_t)> dfs = [&](int32_t r) -> bool {
    color[r] = 1;
    path.push_back(r);
    for (int32_t s : starts[r]) {
      if (color[s] == 1) {
        auto it = std::find(path.begin(), path.end(), s);
        for (; it != path.end(); ++it) cycle += "'" + rules_[*it].name + "' -> ";
        cycle += "'" + rules_[s].name + "'";
        return true;
      }
      if (color[s] == 0 && dfs(s)) return true;
    }
    path.pop_back();
    color[r] = 2;
    return false;
  };
  for (int32_t r = 0; r < n; ++r) {
    if (color[r] == 0 && dfs(r)) {
      return invalid_argument("left recursion: " + cycle +
                              " (a rule reaches itself before matching a character; rewrite it right recursive, "
                              "e.g. x ::= y x | y)");
    }
  }

  // Productive rules: can match some finite string.
  std::vector<char> productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      if (productive[r]) continue;
      for (const Sequence& alt : rules_[r].alternatives) {
        bool all = true;
        for (const Element& e : alt) {
          if (e.is_rule_ref() && !productive[e.rule]) {
            all = false;
            break;
          }
        }
        if (all) {
          productive[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  if (!productive[root_]) {
    return invalid_argument("root rule '" + rules_[root_].name + "' matches no finite string (its recursion never ends)");
  }
  return Status::ok_status();
}

}  // namespace pagoda::grammar
