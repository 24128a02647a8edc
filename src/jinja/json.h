#pragma once
// JSON in and out of template values. In: a request's messages, tools and extra
// variables become Values (objects keep their key order: tojson shows keys in the order
// the client sent them, as Python's json module does). Out: Python's json.dumps, which
// the `tojson` filter of Hugging Face's chat template environment calls, byte for byte.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/status.h"
#include "jinja/value.h"

namespace pagoda::jinja {

// Objects nest at most kMaxValueDepth deep; integers must fit in 64 bits signed.
Expected<Value> from_json(const nlohmann::ordered_json& json);

// json.dumps(value, ensure_ascii=..., indent=..., separators=..., sort_keys=...).
struct JsonDumpOptions {
  bool ensure_ascii = false;                  // \uXXXX for every non-ASCII character
  std::optional<std::string> indent;          // None: one line; else newline + indent per level
  std::optional<std::string> item_separator;  // default ", " (one line) or "," (indented)
  std::string key_separator = ": ";
  bool sort_keys = false;
  size_t max_bytes = SIZE_MAX;  // a longer result is an error (kResourceExhausted)
};
// Errors as Python's TypeError: "Object of type Undefined is not JSON serializable",
// "keys must be str, int, float, bool or None, not tuple".
Expected<std::string> dump_json(const Value& value, const JsonDumpOptions& options);

}  // namespace pagoda::jinja
