#include "jinja/json.h"

#include <cstdio>
#include <limits>

#include "jinja/sort.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

Expected<Value> convert(const nlohmann::ordered_json& json, uint32_t depth) {
  using Type = nlohmann::ordered_json::value_t;
  if (depth > kMaxValueDepth) {
    return invalid_argument("JSON nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
  switch (json.type()) {
    case Type::null:
      return Value(None{});
    case Type::boolean:
      return Value(json.get<bool>());
    case Type::number_integer:
      return Value(json.get<int64_t>());
    case Type::number_unsigned: {
      const uint64_t n = json.get<uint64_t>();
      if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return invalid_argument("JSON integer " + std::to_string(n) + " does not fit in 64 bits");
      }
      return Value(static_cast<int64_t>(n));
    }
    case Type::number_float:
      return Value(json.get<double>());
    case Type::string:
      return Value(json.get_ref<const std::string&>());
    case Type::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) {
        PAGODA_ASSIGN_OR_RETURN(Value value, convert(item, depth + 1));
        items.push_back(std::move(value));
      }
      return Value::list(std::move(items));
    }
    case Type::object: {
      DictData dict;
      dict.entries.reserve(json.size());
      for (const auto& [key, item] : json.items()) {
        PAGODA_ASSIGN_OR_RETURN(Value value, convert(item, depth + 1));
        dict.entries.emplace_back(Value(key), std::move(value));
      }
      return Value::dict(std::move(dict));
    }
    case Type::binary:
      return invalid_argument("binary JSON values are not supported");
    case Type::discarded:
      return invalid_argument("discarded JSON value");
  }
  return invalid_argument("unknown JSON value type");
}

void append_hex4(std::string& out, uint32_t unit) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", unit);
  out += buffer;
}

// A JSON string literal as Python's json encoder writes it.
void append_json_string(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  for (size_t offset = 0; offset < text.size();) {
    const size_t at = offset;
    const uint32_t cpt = next_codepoint(text, offset);
    switch (cpt) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cpt < 0x20 || (ensure_ascii && cpt == 0x7F)) {
      append_hex4(out, cpt);
    } else if (cpt < 0x80 || !ensure_ascii) {
      out += text.substr(at, offset - at);
    } else if (cpt < 0x10000) {
      append_hex4(out, cpt);
    } else {
      const uint32_t v = cpt - 0x10000;
      append_hex4(out, 0xD800 | (v >> 10));
      append_hex4(out, 0xDC00 | (v & 0x3FF));
    }
  }
  out += '"';
}

std::string json_float(double value) {
  if (value != value) return "NaN";
  if (value == std::numeric_limits<double>::infinity()) return "Infinity";
  if (value == -std::numeric_limits<double>::infinity()) return "-Infinity";
  return repr_float(value);
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& options)
      : options_(options),
        item_separator_(options.item_separator ? *options.item_separator
                                               : (options.indent ? "," : ", ")) {}

  Status write(const Value& value, int level) {
    if (out_.size() > options_.max_bytes)
      return resource_exhausted("tojson: the JSON text is over the size limit");
    switch (value.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return {};
      case Value::Kind::kBool:
        out_ += value.as_bool() ? "true" : "false";
        return {};
      case Value::Kind::kInt:
        out_ += std::to_string(value.as_int());
        return {};
      case Value::Kind::kFloat:
        out_ += json_float(value.as_float());
        return {};
      case Value::Kind::kString:
        append_json_string(out_, value.as_string(), options_.ensure_ascii);
        return {};
      case Value::Kind::kList:
        if (value.is_generator()) break;
        return write_list(value.items(), level);
      case Value::Kind::kDict:
        return write_dict(value.as_dict(), level);
      default:
        break;
    }
    return invalid_argument("Object of type " + std::string(type_name(value)) +
                            " is not JSON serializable");
  }

  std::string take() { return std::move(out_); }

 private:
  // Between items: the separator, then a newline and indentation when indenting.
  void newline(int level) {
    if (!options_.indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *options_.indent;
  }

  Status write_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return {};
    }
    out_ += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += item_separator_;
      newline(level + 1);
      PAGODA_TRY(write(items[i], level + 1));
    }
    newline(level);
    out_ += ']';
    return {};
  }

  Status write_key(const Value& key) {
    switch (key.kind()) {
      case Value::Kind::kString:
        append_json_string(out_, key.as_string(), options_.ensure_ascii);
        return {};
      case Value::Kind::kNone:
        out_ += "\"null\"";
        return {};
      case Value::Kind::kBool:
        out_ += key.as_bool() ? "\"true\"" : "\"false\"";
        return {};
      case Value::Kind::kInt:
        out_ += '"' + std::to_string(key.as_int()) + '"';
        return {};
      case Value::Kind::kFloat:
        out_ += '"' + json_float(key.as_float()) + '"';
        return {};
      default:
        return invalid_argument("keys must be str, int, float, bool or None, not " +
                                std::string(type_name(key)));
    }
  }

  Status write_dict(const DictData& dict, int level) {
    if (dict.entries.empty()) {
      out_ += "{}";
      return {};
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& entry : dict.entries) entries.push_back(&entry);
    if (options_.sort_keys) PAGODA_TRY(sort_entries(entries));
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out_ += item_separator_;
      newline(level + 1);
      PAGODA_TRY(write_key(entries[i]->first));
      out_ += options_.key_separator;
      PAGODA_TRY(write(entries[i]->second, level + 1));
    }
    newline(level);
    out_ += '}';
    return {};
  }

  // Python sorts the keys themselves: mixed key types are a TypeError.
  static Status sort_entries(std::vector<const std::pair<Value, Value>*>& entries) {
    return stable_sort(entries, [](const auto* a, const auto* b) -> Expected<bool> {
      PAGODA_ASSIGN_OR_RETURN(const int c, compare(a->first, b->first));
      return c < 0;
    });
  }

  const JsonDumpOptions& options_;
  std::string item_separator_;
  std::string out_;
};

}  // namespace

Expected<Value> from_json(const nlohmann::ordered_json& json) {
  return convert(json, 1);
}

Expected<std::string> dump_json(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  PAGODA_TRY(writer.write(value, 0));
  return writer.take();
}

}  // namespace pagoda::jinja
