#include "grammar/regex_to_gbnf.h"

#include <algorithm>
#include <cstdio>

#include "grammar/choice_gbnf.h"
#include "grammar/regex_parser.h"

namespace pagoda::grammar {
namespace {

// The JSON text of one code point inside a string: itself, or its escape.
std::string json_escaped(uint32_t codepoint) {
  switch (codepoint) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (codepoint < 0x20) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "\\u%04x", codepoint);
    return buffer;
  }
  return {};  // written as itself
}

std::string literal_of_codepoints(const std::vector<uint32_t>& codepoints, bool json) {
  std::string body;
  for (uint32_t codepoint : codepoints) {
    const std::string escaped = json ? json_escaped(codepoint) : std::string();
    if (escaped.empty()) {
      body += gbnf_escape_codepoint(codepoint, /*in_class=*/false);
    } else {
      for (char c : escaped) body += gbnf_escape_codepoint(static_cast<uint8_t>(c), false);
    }
  }
  return "\"" + body + "\"";
}

// In a JSON string, the controls without a short escape are written \u00XX: those of
// the set, grouped by their third hex digit, as "\u000" or "\u001" and a class of the
// last digit (either case).
void add_unicode_escaped_controls(const CodepointSet& set, std::vector<std::string>& parts) {
  for (uint32_t high = 0; high < 2; ++high) {
    CodepointSet last_digits;
    for (uint32_t low = 0; low < 16; ++low) {
      const uint32_t codepoint = high * 16 + low;
      if (!set.contains(codepoint) || !json_escaped(codepoint).starts_with("\\u")) continue;
      const char* digits = "0123456789abcdef";
      last_digits.add(static_cast<uint8_t>(digits[low]));
      if (low >= 10) last_digits.add(static_cast<uint8_t>(digits[low] - 'a' + 'A'));
    }
    if (last_digits.empty()) continue;
    parts.push_back(std::string("\"\\\\u00") + static_cast<char>('0' + high) + "\" " +
                    last_digits.to_gbnf_class());
  }
}

// One code point of `set`, written as JSON string content.
std::string json_character(const CodepointSet& set) {
  CodepointSet special = CodepointSet::of(0, 0x1F);
  special.add('"');
  special.add('\\');
  std::vector<std::string> parts;
  const CodepointSet plain = set.minus(special);
  if (!plain.empty()) parts.push_back(plain.to_gbnf_class());
  for (uint32_t codepoint : {uint32_t{'"'}, uint32_t{'\\'}, uint32_t{'\b'}, uint32_t{'\f'},
                             uint32_t{'\n'}, uint32_t{'\r'}, uint32_t{'\t'}}) {
    if (set.contains(codepoint)) parts.push_back(literal_of_codepoints({codepoint}, true));
  }
  add_unicode_escaped_controls(set, parts);
  if (parts.empty()) return {};
  if (parts.size() == 1) return parts[0];
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

// Whether the node matches the empty string, and whether that is all it matches.
bool nullable(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kCharacter: return false;
    case RegexNode::Kind::kSequence:
      return std::all_of(node.children.begin(), node.children.end(), nullable);
    case RegexNode::Kind::kAlternation:
      return std::any_of(node.children.begin(), node.children.end(), nullable);
    case RegexNode::Kind::kRepeat: return node.min == 0 || nullable(node.children[0]);
  }
  return false;
}

bool only_empty(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::kCharacter: return false;
    case RegexNode::Kind::kSequence:
    case RegexNode::Kind::kAlternation:
      return std::all_of(node.children.begin(), node.children.end(), only_empty);
    case RegexNode::Kind::kRepeat: return node.max == 0 || only_empty(node.children[0]);
  }
  return false;
}

// The node's strings but the empty one (the node must match some non-empty string).
RegexNode without_empty(const RegexNode& node) {
  if (!nullable(node)) return node;
  RegexNode out;
  switch (node.kind) {
    case RegexNode::Kind::kCharacter: return node;
    case RegexNode::Kind::kAlternation:
      out.kind = RegexNode::Kind::kAlternation;
      for (const RegexNode& child : node.children) {
        if (!only_empty(child)) out.children.push_back(without_empty(child));
      }
      return out;
    case RegexNode::Kind::kSequence:
      // Every child is nullable: the first non-empty part is child i, the rest as they are.
      out.kind = RegexNode::Kind::kAlternation;
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (only_empty(node.children[i])) continue;
        RegexNode branch;
        branch.kind = RegexNode::Kind::kSequence;
        branch.children.push_back(without_empty(node.children[i]));
        branch.children.insert(branch.children.end(), node.children.begin() + i + 1, node.children.end());
        out.children.push_back(std::move(branch));
      }
      return out;
    case RegexNode::Kind::kRepeat:
      // One to max non-empty pieces.
      out = node;
      out.min = 1;
      out.children[0] = without_empty(node.children[0]);
      return out;
  }
  return node;
}

class RegexEmitter {
 public:
  explicit RegexEmitter(bool json) : json_(json) {}

  // The node as a GBNF expression; `atomic` when it is to carry a quantifier.
  Expected<std::string> emit(const RegexNode& node, bool atomic) {
    switch (node.kind) {
      case RegexNode::Kind::kCharacter: return emit_character(node.set);
      case RegexNode::Kind::kSequence: return emit_sequence(node, atomic);
      case RegexNode::Kind::kAlternation: {
        std::string out = "(";
        for (size_t i = 0; i < node.children.size(); ++i) {
          PAGODA_ASSIGN_OR_RETURN(std::string child, emit(node.children[i], false));
          out += (i ? " | " : "") + child;
        }
        return out + ")";
      }
      case RegexNode::Kind::kRepeat: {
        // A grammar cannot repeat what matches the empty string (the matcher would loop):
        // X{m,n} with X nullable is (X without "")'s {0,n}.
        if (only_empty(node.children[0])) return std::string("\"\"");
        const bool nullable_child = nullable(node.children[0]);
        const RegexNode inner = nullable_child ? without_empty(node.children[0]) : node.children[0];
        PAGODA_ASSIGN_OR_RETURN(std::string child, emit(inner, true));
        if (inner.kind == RegexNode::Kind::kRepeat) child = "(" + child + ")";
        return gbnf_repeat(child, nullable_child ? 0 : node.min, node.max);
      }
    }
    return internal_error("regex: unknown node");
  }

 private:
  Expected<std::string> emit_character(const CodepointSet& set) {
    const auto& ranges = set.ranges();
    if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
      return literal_of_codepoints({ranges[0].first}, json_);
    }
    std::string out = json_ ? json_character(set) : set.to_gbnf_class();
    if (out.empty()) return invalid_argument("regex: a character class that matches nothing");
    return out;
  }

  Expected<std::string> emit_sequence(const RegexNode& node, bool atomic) {
    std::vector<std::string> parts;
    std::vector<uint32_t> pending;  // single code points, merged into one literal
    auto flush = [&] {
      if (!pending.empty()) parts.push_back(literal_of_codepoints(pending, json_));
      pending.clear();
    };
    for (const RegexNode& child : node.children) {
      const auto& ranges = child.set.ranges();
      if (child.kind == RegexNode::Kind::kCharacter && ranges.size() == 1 &&
          ranges[0].first == ranges[0].second) {
        pending.push_back(ranges[0].first);
        continue;
      }
      flush();
      PAGODA_ASSIGN_OR_RETURN(std::string part, emit(child, false));
      parts.push_back(std::move(part));
    }
    flush();
    if (parts.empty()) return std::string("\"\"");
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " " : "") + parts[i];
    // A literal of several characters is wrapped too: "ab"* is not read alike everywhere.
    const bool compound = node.children.size() > 1 || node.children.back().kind == RegexNode::Kind::kRepeat;
    return (atomic && compound) ? "(" + out + ")" : out;
  }

  bool json_;
};

}  // namespace

std::string gbnf_repeat(const std::string& atom, size_t min, std::optional<size_t> max) {
  if (max && *max == 0) return "\"\"";
  if (min == 0 && !max) return atom + "*";
  if (min == 1 && !max) return atom + "+";
  if (min == 0 && max == 1) return atom + "?";
  if (min == 1 && max == 1) return atom;
  if (max == min) return atom + "{" + std::to_string(min) + "}";
  return atom + "{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "}";
}

Expected<std::string> regex_to_gbnf_expression(std::string_view pattern,
                                               const RegexOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(RegexNode root, parse_regex(pattern));
  return RegexEmitter(options.json_string_content).emit(root, false);
}

Expected<std::string> regex_to_gbnf(std::string_view pattern, const RegexOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(std::string expression, regex_to_gbnf_expression(pattern, options));
  return options.root_rule + " ::= " + expression + "\n";
}

}  // namespace pagoda::grammar
