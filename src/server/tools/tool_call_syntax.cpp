#include "server/tools/tool_call_syntax.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace pagoda::server::tools {
namespace {

enum class Scan { kOk, kPartial, kInvalid };

bool is_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A position in text that may end early: every read says whether it matched, ran out
// of text (kPartial), or cannot match.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_space() {
    while (!at_end() && is_json_space(peek())) ++pos_;
  }

  Scan literal(std::string_view word) {
    const std::string_view rest = text_.substr(pos_);
    if (rest.starts_with(word)) {
      pos_ += word.size();
      return Scan::kOk;
    }
    return word.starts_with(rest) ? Scan::kPartial : Scan::kInvalid;
  }

  // A JSON string; `decoded` gets its value when complete.
  Scan string(std::string* decoded) {
    if (at_end()) return Scan::kPartial;
    if (peek() != '"') return Scan::kInvalid;
    size_t i = pos_ + 1;
    for (; i < text_.size(); ++i) {
      if (text_[i] == '\\') {
        ++i;
      } else if (text_[i] == '"') {
        break;
      }
    }
    if (i >= text_.size()) return Scan::kPartial;
    const std::string_view raw = text_.substr(pos_, i + 1 - pos_);
    nlohmann::json value = nlohmann::json::parse(raw, nullptr, /*allow_exceptions=*/false);
    if (!value.is_string()) return Scan::kInvalid;
    if (decoded != nullptr) *decoded = value.get<std::string>();
    pos_ = i + 1;
    return Scan::kOk;
  }

  // Any JSON value; `raw` gets its text (when partial: the text read of it so far).
  Scan value(std::string_view* raw) {
    const size_t start = pos_;
    const Scan scan = value_end();
    if (scan == Scan::kInvalid) return scan;
    if (scan == Scan::kPartial) {
      *raw = text_.substr(start);
      return scan;
    }
    *raw = text_.substr(start, pos_ - start);
    if (!nlohmann::json::accept(*raw)) return Scan::kInvalid;
    return Scan::kOk;
  }

 private:
  // Moves past one value: brackets matched outside strings, scalars up to a delimiter.
  Scan value_end() {
    if (at_end()) return Scan::kPartial;
    const char first = peek();
    if (first == '"') return string(nullptr);
    if (first != '{' && first != '[') {
      size_t i = pos_;
      while (i < text_.size() && std::string_view("+-.0123456789abcdefghijklmnopqrstuvwxyzE")
                                         .find(text_[i]) != std::string_view::npos) {
        ++i;
      }
      if (i == pos_) return Scan::kInvalid;
      if (i >= text_.size()) return Scan::kPartial;
      pos_ = i;
      return Scan::kOk;
    }
    int depth = 0;
    bool in_string = false;
    for (size_t i = pos_; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          pos_ = i + 1;
          return Scan::kOk;
        }
      }
    }
    return Scan::kPartial;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

#define PAGODA_SCAN(expr)                         \
  do {                                            \
    if (const Scan s_ = (expr); s_ != Scan::kOk) \
      return s_;                                  \
  } while (false)

// {"name": "f", "arguments": {..}} (or "parameters"; other keys are skipped).
Scan call_object(Cursor& cursor, PartialCall& call) {
  PAGODA_SCAN(cursor.literal("{"));
  bool first = true;
  bool has_arguments = false;
  while (true) {
    cursor.skip_space();
    if (cursor.at_end()) return Scan::kPartial;
    if (cursor.peek() == '}') {
      cursor.literal("}");
      if (!call.name_done) return Scan::kInvalid;
      if (!has_arguments) call.arguments = "{}";
      call.arguments_done = true;
      return Scan::kOk;
    }
    if (!first) {
      PAGODA_SCAN(cursor.literal(","));
      cursor.skip_space();
    }
    first = false;
    std::string key;
    PAGODA_SCAN(cursor.string(&key));
    cursor.skip_space();
    PAGODA_SCAN(cursor.literal(":"));
    cursor.skip_space();
    if (key == "name") {
      if (call.name_done) return Scan::kInvalid;
      PAGODA_SCAN(cursor.string(&call.name));
      call.name_done = true;
    } else if (key == "arguments" || key == "parameters") {
      if (has_arguments) return Scan::kInvalid;
      std::string_view raw;
      const Scan scan = cursor.value(&raw);
      if (scan == Scan::kInvalid) return scan;
      const bool is_string = raw.starts_with('"');
      if (scan == Scan::kPartial) {
        // A string's text is its decoded value: known only once it is whole.
        if (!is_string) call.arguments = std::string(raw);
        return scan;
      }
      has_arguments = true;
      call.arguments = is_string ? nlohmann::json::parse(raw).get<std::string>() : std::string(raw);
    } else {
      std::string_view skipped;
      PAGODA_SCAN(cursor.value(&skipped));
    }
  }
}

// Calls separated by commas up to `close` (after the opening bracket was read).
Scan call_list(Cursor& cursor, BlockScan& block, std::string_view close) {
  cursor.skip_space();
  if (cursor.at_end()) return Scan::kPartial;
  if (cursor.literal(close) == Scan::kOk) return Scan::kOk;
  while (true) {
    block.calls.emplace_back();
    PAGODA_SCAN(call_object(cursor, block.calls.back()));
    cursor.skip_space();
    if (cursor.at_end()) return Scan::kPartial;
    if (cursor.literal(close) == Scan::kOk) return Scan::kOk;
    PAGODA_SCAN(cursor.literal(","));
    cursor.skip_space();
  }
}

Scan hermes_block(Cursor& cursor, BlockScan& block) {
  PAGODA_SCAN(cursor.literal(kHermesCallOpen));
  cursor.skip_space();
  block.calls.emplace_back();
  PAGODA_SCAN(call_object(cursor, block.calls.back()));
  cursor.skip_space();
  return cursor.literal(kHermesCallClose);
}

Scan llama_block(Cursor& cursor, BlockScan& block) {
  if (cursor.literal(kLlamaPythonTag) == Scan::kOk) cursor.skip_space();
  block.calls.emplace_back();
  return call_object(cursor, block.calls.back());
}

Scan mistral_block(Cursor& cursor, BlockScan& block) {
  PAGODA_SCAN(cursor.literal(kMistralToolCalls));
  cursor.skip_space();
  if (cursor.at_end()) return Scan::kPartial;
  if (cursor.peek() == '{') {  // one call without the list
    block.calls.emplace_back();
    return call_object(cursor, block.calls.back());
  }
  PAGODA_SCAN(cursor.literal("["));
  return call_list(cursor, block, "]");
}

// {"tool_calls": [..]} or {"content": ".."}.
Scan generic_block(Cursor& cursor, BlockScan& block) {
  PAGODA_SCAN(cursor.literal("{"));
  cursor.skip_space();
  std::string key;
  PAGODA_SCAN(cursor.string(&key));
  cursor.skip_space();
  PAGODA_SCAN(cursor.literal(":"));
  cursor.skip_space();
  if (key == "tool_calls") {
    PAGODA_SCAN(cursor.literal("["));
    PAGODA_SCAN(call_list(cursor, block, "]"));
    if (block.calls.empty()) return Scan::kInvalid;
  } else if (key == "content") {
    std::string content;
    PAGODA_SCAN(cursor.string(&content));
    block.content = std::move(content);
  } else {
    return Scan::kInvalid;
  }
  cursor.skip_space();
  return cursor.literal("}");
}

#undef PAGODA_SCAN

constexpr std::array<std::string_view, 1> kHermesOpenings = {kHermesCallOpen};
// Llama's call is a bare JSON object, which may have whitespace after its brace: any '{'
// may open one (an object that is not a call goes back to the text once it is whole).
constexpr std::array<std::string_view, 2> kLlamaOpenings = {kLlamaPythonTag, "{"};
constexpr std::array<std::string_view, 1> kMistralOpenings = {kMistralToolCalls};
constexpr std::array<std::string_view, 1> kGenericOpenings = {"{"};

}  // namespace

std::span<const std::string_view> call_openings(ToolFamily family) {
  switch (family) {
    case ToolFamily::kHermes:
      return kHermesOpenings;
    case ToolFamily::kLlama3:
      return kLlamaOpenings;
    case ToolFamily::kMistral:
      return kMistralOpenings;
    case ToolFamily::kGeneric:
      return kGenericOpenings;
  }
  return kGenericOpenings;
}

bool is_call_separator(ToolFamily family, char c) {
  return is_json_space(c) || (family == ToolFamily::kLlama3 && c == ';');
}

BlockScan scan_call_block(ToolFamily family, std::string_view text, bool final) {
  BlockScan block;
  Cursor cursor(text);
  Scan scan = Scan::kInvalid;
  switch (family) {
    case ToolFamily::kHermes:
      scan = hermes_block(cursor, block);
      break;
    case ToolFamily::kLlama3:
      scan = llama_block(cursor, block);
      break;
    case ToolFamily::kMistral:
      scan = mistral_block(cursor, block);
      break;
    case ToolFamily::kGeneric:
      scan = generic_block(cursor, block);
      break;
  }
  // A model that ends its turn right after its last call's JSON, without the closing
  // tag or bracket, still made its calls.
  const bool calls_whole =
      !block.calls.empty() && std::all_of(block.calls.begin(), block.calls.end(),
                                          [](const PartialCall& call) {
                                            return call.name_done && call.arguments_done;
                                          });
  if (scan == Scan::kOk) {
    block.state = BlockState::kComplete;
    block.length = cursor.pos();
  } else if (scan == Scan::kPartial && final && calls_whole) {
    block.state = BlockState::kComplete;
    block.length = text.size();
  } else if (scan == Scan::kPartial && !final) {
    block.state = BlockState::kPartial;
  } else {
    block.state = BlockState::kInvalid;
  }
  if (block.state != BlockState::kComplete) block.content.reset();
  return block;
}

}  // namespace pagoda::server::tools
