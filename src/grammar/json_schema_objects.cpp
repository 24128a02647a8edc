// JsonSchemaConverter's objects: properties in the schema's order, required ones
// present, optional ones present or not, then the extra properties additionalProperties
// allows.
#include <algorithm>

#include "grammar/choice_gbnf.h"
#include "grammar/json_schema_converter.h"

namespace pagoda::grammar {

Expected<JsonSchemaConverter::ObjectKeywords> JsonSchemaConverter::read_object_keywords(
    const Json& schema, const std::string& pointer) const {
  static const Json kNoProperties = Json::object();
  static const Json kAllowed = true;
  static const Json kForbidden = false;
  ObjectKeywords keywords;
  keywords.properties = schema.contains("properties") ? &schema["properties"] : &kNoProperties;
  if (!keywords.properties->is_object()) {
    return schema_error("properties must be an object", json_pointer_child(pointer, "properties"));
  }
  if (schema.contains("required")) {
    const Json& required = schema["required"];
    const std::string required_pointer = json_pointer_child(pointer, "required");
    if (!required.is_array()) return schema_error("required must be an array of strings", required_pointer);
    for (const Json& name : required) {
      if (!name.is_string()) return schema_error("required must be an array of strings", required_pointer);
      const std::string text = name.get<std::string>();
      if (std::find(keywords.required.begin(), keywords.required.end(), text) == keywords.required.end()) {
        keywords.required.push_back(text);
      }
    }
  }
  keywords.additional = schema.contains("additionalProperties") ? &schema["additionalProperties"]
                        : options_.strict_properties                ? &kForbidden
                                                                    : &kAllowed;
  if (!keywords.additional->is_boolean() && !keywords.additional->is_object()) {
    return schema_error("additionalProperties must be a boolean or a schema",
                        json_pointer_child(pointer, "additionalProperties"));
  }
  return keywords;
}

Expected<std::string> JsonSchemaConverter::convert_object(const Json& schema, const std::string& pointer,
                                                          const std::string& hint) {
  PAGODA_ASSIGN_OR_RETURN(ObjectKeywords keywords, read_object_keywords(schema, pointer));
  const Json& additional = *keywords.additional;
  const bool extras = !(additional.is_boolean() && !additional.get<bool>());
  if (keywords.properties->empty() && keywords.required.empty() && additional.is_boolean() && extras) {
    return shared_rule("object");
  }
  auto is_required = [&](const std::string& name) {
    return std::find(keywords.required.begin(), keywords.required.end(), name) != keywords.required.end();
  };
  std::vector<ObjectMember> members;
  const std::string properties_pointer = json_pointer_child(pointer, "properties");
  for (const auto& [name, property_schema] : keywords.properties->items()) {
    const std::string property_pointer = json_pointer_child(properties_pointer, name);
    if (property_schema.is_boolean() && !property_schema.get<bool>()) {
      if (is_required(name)) return schema_error("a required property whose schema is false", property_pointer);
      continue;  // never written
    }
    PAGODA_ASSIGN_OR_RETURN(std::string value, rule_for(property_schema, property_pointer, hint + "-" + name));
    members.push_back({gbnf_literal(json_text(Json(name))), is_required(name), value});
  }
  // Required names without a schema of their own take any value, after the declared ones.
  for (const std::string& name : keywords.required) {
    if (!keywords.properties->contains(name)) {
      members.push_back({gbnf_literal(json_text(Json(name))), true, shared_rule("value")});
    }
  }
  std::string extra_member;
  if (extras) {
    std::string extra_value = shared_rule("value");
    if (additional.is_object()) {
      PAGODA_ASSIGN_OR_RETURN(extra_value, rule_for(additional, json_pointer_child(pointer, "additionalProperties"),
                                                    hint + "-additional"));
    }
    extra_member = gbnf_sequence({shared_rule("string"), "\":\"", ws(), extra_value});
  }
  return object_body(members, extra_member, hint);
}

// tail[i]: the members from i on, each after a comma (something came before them).
// first[i]: the members from i on when none came before; empty when member i cannot be
// the first one written (a required member comes before it).
std::string JsonSchemaConverter::object_body(const std::vector<ObjectMember>& members,
                                             const std::string& extra_member, const std::string& hint) {
  const std::string space = ws();
  const size_t n = members.size();
  size_t first_required = n;
  for (size_t i = 0; i < n && first_required == n; ++i) {
    if (members[i].required) first_required = i;
  }
  std::vector<std::string> tail(n + 1), first(n + 1);
  if (!extra_member.empty()) {
    tail[n] = parenthesized(gbnf_sequence({"\",\"", space, extra_member}), "*");
    first[n] = gbnf_sequence({extra_member, tail[n]});
  }
  for (size_t i = n; i-- > 0;) {
    const ObjectMember& m = members[i];
    const std::string member = gbnf_sequence({m.key_literal, "\":\"", space, m.value});
    // tail[i + 1] is used twice (by tail[i] and first[i]) where member i can come first.
    std::string rest = tail[i + 1];
    if (i <= first_required && !rest.empty()) rest = add_rule(hint + "-tail-" + std::to_string(i + 1), rest);
    const std::string after_comma = gbnf_sequence({"\",\"", space, member});
    tail[i] = gbnf_sequence({m.required ? after_comma : parenthesized(after_comma, "?"), rest});
    if (i > first_required) continue;
    std::vector<std::string> starts = {gbnf_sequence({member, rest})};
    if (!m.required && !first[i + 1].empty()) starts.push_back(first[i + 1]);
    first[i] = gbnf_alternatives(starts);
  }
  const std::string empty = gbnf_sequence({"\"{\"", space, "\"}\""});
  if (first[0].empty()) return empty;
  const std::string full = gbnf_sequence({"\"{\"", space, first[0], space, "\"}\""});
  return first_required == n ? gbnf_alternatives({empty, full}) : full;
}

}  // namespace pagoda::grammar
