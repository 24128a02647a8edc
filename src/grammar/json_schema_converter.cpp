#include "grammar/json_schema_converter.h"

#include <array>
#include <string_view>

namespace pagoda::grammar {
namespace {

constexpr std::array<std::string_view, 24> kSupportedKeywords = {
    "type",      "properties", "required",  "additionalProperties", "items",
    "prefixItems", "minItems",  "maxItems",  "enum",                 "const",
    "anyOf",     "oneOf",      "allOf",     "$ref",                 "$defs",
    "definitions", "minLength", "maxLength", "pattern",              "format",
    "minimum",   "maximum",    "exclusiveMinimum", "exclusiveMaximum"};

constexpr std::array<std::string_view, 10> kAnnotations = {
    "title",   "description", "default",    "examples", "$schema",
    "$id",     "$comment",    "deprecated", "readOnly", "writeOnly"};

template <size_t N>
bool one_of(const std::array<std::string_view, N>& words, std::string_view word) {
  for (std::string_view w : words) {
    if (w == word) return true;
  }
  return false;
}

bool is_annotation_or_definitions(std::string_view key) {
  return one_of(kAnnotations, key) || key == "$defs" || key == "definitions";
}

// The keywords of `schema` that constrain instances, without `except`.
Json validation_siblings(const Json& schema, std::string_view except) {
  Json siblings = Json::object();
  for (const auto& [key, value] : schema.items()) {
    if (key != except && !is_annotation_or_definitions(key)) siblings[key] = value;
  }
  return siblings;
}

// `branch` with the keywords of `siblings` it lacks; properties (the siblings' first, a
// branch's own schema winning) and required joined.
Json merge_schemas(const Json& siblings, const Json& branch) {
  Json merged = branch;
  for (const auto& [key, value] : siblings.items()) {
    if (!merged.contains(key)) {
      merged[key] = value;
    } else if (key == "properties" && value.is_object() && merged[key].is_object()) {
      Json properties = value;  // the shared properties first, the branch's own after
      for (const auto& [name, property] : merged[key].items()) properties[name] = property;
      merged[key] = std::move(properties);
    } else if (key == "required" && value.is_array() && merged[key].is_array()) {
      for (const auto& name : value) merged[key].push_back(name);
    }
  }
  return merged;
}

// The types a schema without "type" is about, from its keywords.
std::vector<std::string> inferred_types(const Json& schema) {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kKeywordsOfType = {
      {"object", {"properties", "required", "additionalProperties"}},
      {"array", {"items", "prefixItems", "minItems", "maxItems"}},
      {"string", {"minLength", "maxLength", "pattern", "format"}},
      {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
  };
  std::vector<std::string> types;
  for (const auto& [type, keywords] : kKeywordsOfType) {
    for (const std::string& keyword : keywords) {
      if (schema.contains(keyword)) {
        types.push_back(type);
        break;
      }
    }
  }
  return types;
}

// The types "type" names, or without it the types the keywords imply (none: any value).
Expected<std::vector<std::string>> schema_types(const Json& schema, const std::string& pointer) {
  if (!schema.contains("type")) return inferred_types(schema);
  const Json& type = schema["type"];
  const Status bad_type = invalid_argument("type must be a string or a list of strings at " +
                                           json_pointer_child(pointer, "type"));
  if (type.is_string()) return std::vector<std::string>{type.get<std::string>()};
  if (!type.is_array() || type.empty()) return bad_type;
  std::vector<std::string> types;
  for (const Json& one : type) {
    if (!one.is_string()) return bad_type;
    types.push_back(one.get<std::string>());
  }
  return types;
}

}  // namespace

std::string json_pointer_child(const std::string& pointer, const std::string& key) {
  std::string escaped;
  for (char c : key) {
    if (c == '~') {
      escaped += "~0";
    } else if (c == '/') {
      escaped += "~1";
    } else {
      escaped += c;
    }
  }
  return pointer + "/" + escaped;
}

std::string describe_pointer(const std::string& pointer) {
  return pointer.empty() ? "the schema root" : pointer;
}

Status schema_error(const std::string& what, const std::string& pointer) {
  return invalid_argument(what + " at " + describe_pointer(pointer));
}

std::string gbnf_alternatives(const std::vector<std::string>& parts) {
  if (parts.size() == 1) return parts[0];
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

JsonSchemaConverter::JsonSchemaConverter(const Json& root_schema, const JsonSchemaOptions& options)
    : root_schema_(root_schema), options_(options) {}

Expected<std::string> JsonSchemaConverter::convert_root() {
  root_name_ = reserve_rule(options_.root_rule);
  PAGODA_ASSIGN_OR_RETURN(std::string body, convert(root_schema_, "", options_.root_rule));
  set_rule(root_name_, body);
  return grammar_text();
}

std::string JsonSchemaConverter::any_json(bool object_only) {
  const std::string root = reserve_rule(options_.root_rule);
  set_rule(root, shared_rule(object_only ? "object" : "value"));
  return grammar_text();
}

Expected<std::string> JsonSchemaConverter::rule_for(const Json& schema, const std::string& pointer,
                                                    const std::string& hint) {
  PAGODA_ASSIGN_OR_RETURN(std::string body, convert(schema, pointer, hint));
  if (is_rule_name(body)) return body;
  return add_rule(hint, body);
}

Expected<std::string> JsonSchemaConverter::convert(const Json& schema, const std::string& pointer,
                                                   const std::string& hint) {
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d) : depth(++d) {}
    ~DepthGuard() { --depth; }
  } guard(depth_);
  if (depth_ > kMaxSchemaDepth) {
    return schema_error("schema nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels", pointer);
  }
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return shared_rule("value");
    return schema_error("schema false (no value allowed) is unsupported here", pointer);
  }
  if (!schema.is_object()) return schema_error("a schema must be an object or a boolean", pointer);
  PAGODA_TRY(check_keywords(schema, pointer));
  if (schema.contains("$ref")) {
    for (const auto& [key, value] : schema.items()) {
      if (key != "$ref" && !is_annotation_or_definitions(key)) {
        return schema_error("unsupported keyword '" + key + "' beside '$ref'", pointer);
      }
    }
    return convert_ref(schema, pointer, hint);
  }
  if (schema.contains("const") || schema.contains("enum")) return convert_enum(schema, pointer);
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (schema.contains(keyword)) return convert_union(schema, keyword, pointer, hint);
  }
  if (schema.contains("allOf")) return convert_all_of(schema, pointer, hint);
  PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> types, schema_types(schema, pointer));
  if (types.empty()) return shared_rule("value");
  std::vector<std::string> parts;
  for (const std::string& type : types) {
    const std::string type_hint = types.size() > 1 ? hint + "-" + type : hint;
    PAGODA_ASSIGN_OR_RETURN(std::string part, convert_typed(schema, type, pointer, type_hint));
    parts.push_back(std::move(part));
  }
  return gbnf_alternatives(parts);
}

Expected<std::string> JsonSchemaConverter::convert_all_of(const Json& schema, const std::string& pointer,
                                                          const std::string& hint) {
  const Json& all = schema["allOf"];
  const std::string all_pointer = json_pointer_child(pointer, "allOf");
  if (!all.is_array() || all.empty()) return schema_error("allOf must be a non-empty array", all_pointer);
  if (all.size() > 1) return schema_error("allOf with more than one subschema is unsupported", all_pointer);
  const Json siblings = validation_siblings(schema, "allOf");
  if (all[0].is_boolean() && all[0].get<bool>()) return convert(siblings, pointer, hint);
  const Json merged = siblings.empty() ? all[0] : merge_schemas(siblings, all[0]);
  return convert(merged, json_pointer_child(all_pointer, "0"), hint);
}

Status JsonSchemaConverter::check_keywords(const Json& schema, const std::string& pointer) const {
  for (const auto& [key, value] : schema.items()) {
    if (!one_of(kSupportedKeywords, key) && !one_of(kAnnotations, key)) {
      return invalid_argument("unsupported JSON Schema keyword '" + key + "' at " +
                              describe_pointer(pointer));
    }
  }
  return Status::ok_status();
}

Expected<std::string> JsonSchemaConverter::convert_typed(const Json& schema, const std::string& type,
                                                         const std::string& pointer,
                                                         const std::string& hint) {
  if (type == "string") return convert_string(schema, pointer);
  if (type == "number") return convert_number(schema, /*integer=*/false, pointer);
  if (type == "integer") return convert_number(schema, /*integer=*/true, pointer);
  if (type == "boolean") return shared_rule("boolean");
  if (type == "null") return shared_rule("null");
  if (type == "object") return convert_object(schema, pointer, hint);
  if (type == "array") return convert_array(schema, pointer, hint);
  return schema_error("unknown type '" + type + "'", json_pointer_child(pointer, "type"));
}

Expected<std::string> JsonSchemaConverter::convert_ref(const Json& schema, const std::string& pointer,
                                                       const std::string& hint) {
  const std::string ref_pointer = json_pointer_child(pointer, "$ref");
  if (!schema["$ref"].is_string()) return schema_error("$ref must be a string", ref_pointer);
  const std::string ref = schema["$ref"].get<std::string>();
  if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
  if (ref.empty() || ref[0] != '#') {
    return schema_error("$ref '" + ref + "' is not a local reference (#...)", ref_pointer);
  }
  const std::string target_pointer = ref.substr(1);
  const Json* target = resolve_pointer(target_pointer);
  if (target == nullptr) return schema_error("$ref '" + ref + "' points nowhere", ref_pointer);
  // "#" is the root, whose rule convert_root reserved first and fills.
  if (target_pointer.empty()) return ref_rules_[ref] = root_name_;
  // Named after the definition, and made before its body so that the body may refer to it.
  const std::string target_hint = target_pointer.substr(target_pointer.rfind('/') + 1);
  const std::string name = reserve_rule(target_hint.empty() ? hint : target_hint);
  ref_rules_[ref] = name;
  PAGODA_ASSIGN_OR_RETURN(std::string body, convert(*target, target_pointer, target_hint));
  // A chain of references that comes back to this one without matching anything first.
  for (std::string alias = body; is_rule_name(alias); alias = rules_[rule_index_[alias]].second) {
    if (alias == name) return schema_error("$ref '" + ref + "' refers to itself without content", ref_pointer);
    if (!rule_index_.count(alias)) break;
  }
  set_rule(name, body);
  return name;
}

const Json* JsonSchemaConverter::resolve_pointer(const std::string& pointer) const {
  const Json* node = &root_schema_;
  size_t start = 0;
  if (pointer.empty()) return node;
  if (pointer[0] != '/') return nullptr;
  while (start < pointer.size()) {
    const size_t end = std::min(pointer.find('/', start + 1), pointer.size());
    std::string token = pointer.substr(start + 1, end - start - 1);
    for (size_t i = 0; (i = token.find('~', i)) != std::string::npos; ++i) {
      if (i + 1 >= token.size() || (token[i + 1] != '0' && token[i + 1] != '1')) return nullptr;
      token.replace(i, 2, token[i + 1] == '0' ? "~" : "/");
    }
    if (node->is_object()) {
      auto it = node->find(token);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array()) {
      if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos) return nullptr;
      const size_t index = std::stoul(token);
      if (index >= node->size()) return nullptr;
      node = &(*node)[index];
    } else {
      return nullptr;
    }
    start = end;
  }
  return node;
}

Expected<std::string> JsonSchemaConverter::convert_union(const Json& schema, const std::string& keyword,
                                                         const std::string& pointer,
                                                         const std::string& hint) {
  const Json& branches = schema[keyword];
  const std::string union_pointer = json_pointer_child(pointer, keyword);
  if (!branches.is_array() || branches.empty()) {
    return schema_error(keyword + " must be a non-empty array", union_pointer);
  }
  const Json siblings = validation_siblings(schema, keyword);
  std::vector<std::string> parts;
  for (size_t i = 0; i < branches.size(); ++i) {
    const Json& branch = branches[i];
    if (branch.is_boolean() && !branch.get<bool>()) continue;  // matches nothing
    const Json merged = siblings.empty() ? branch
                        : branch.is_boolean() ? siblings
                                              : merge_schemas(siblings, branch);
    PAGODA_ASSIGN_OR_RETURN(std::string part, rule_for(merged, json_pointer_child(union_pointer, std::to_string(i)),
                                                       hint + "-" + std::to_string(i)));
    parts.push_back(std::move(part));
  }
  if (parts.empty()) return schema_error(keyword + " whose branches all match nothing", union_pointer);
  return gbnf_alternatives(parts);
}

Expected<std::string> JsonSchemaConverter::convert_enum(const Json& schema, const std::string& pointer) {
  if (schema.contains("const")) return value_literal(schema["const"]);
  const Json& values = schema["enum"];
  if (!values.is_array() || values.empty()) {
    return schema_error("enum must be a non-empty array", json_pointer_child(pointer, "enum"));
  }
  std::vector<std::string> parts;
  for (const Json& value : values) parts.push_back(value_literal(value));
  return gbnf_alternatives(parts);
}

}  // namespace pagoda::grammar
