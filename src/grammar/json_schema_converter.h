#pragma once
// JsonSchemaConverter: the work behind json_schema_to_gbnf (json_schema.h). It walks
// the schema once, making one rule per object, array, constrained string or number,
// enum, union and $ref target, and the shared rules (ws, string, number, value, ...)
// the first time something needs them. Every node is checked on the way; errors name
// the JSON pointer of the node or keyword at fault.

#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "grammar/json_schema.h"

namespace pagoda::grammar {

using Json = nlohmann::ordered_json;

class JsonSchemaConverter {
 public:
  JsonSchemaConverter(const Json& root_schema, const JsonSchemaOptions& options);

  // The grammar text whose root rule matches the root schema's instances.
  Expected<std::string> convert_root();
  // The grammar text of any JSON value (or object).
  std::string any_json(bool object_only);

 private:
  // json_schema_converter.cpp: dispatch, keywords, $ref, unions.
  Expected<std::string> convert(const Json& schema, const std::string& pointer,
                                const std::string& hint);
  Status check_keywords(const Json& schema, const std::string& pointer) const;
  Expected<std::string> convert_ref(const Json& schema, const std::string& pointer,
                                    const std::string& hint);
  const Json* resolve_pointer(const std::string& pointer) const;  // in the root schema
  // The schema's expression as one rule name: its own rule unless it already is a name.
  Expected<std::string> rule_for(const Json& schema, const std::string& pointer,
                                 const std::string& hint);
  Expected<std::string> convert_union(const Json& schema, const std::string& keyword,
                                      const std::string& pointer, const std::string& hint);
  Expected<std::string> convert_all_of(const Json& schema, const std::string& pointer,
                                       const std::string& hint);
  Expected<std::string> convert_enum(const Json& schema, const std::string& pointer);
  Expected<std::string> convert_typed(const Json& schema, const std::string& type,
                                      const std::string& pointer, const std::string& hint);

  // json_schema_types.cpp: one JSON type each (objects below).
  Expected<std::string> convert_string(const Json& schema, const std::string& pointer);
  Expected<std::string> convert_number(const Json& schema, bool integer, const std::string& pointer);
  Expected<std::string> convert_array(const Json& schema, const std::string& pointer,
                                      const std::string& hint);
  std::string value_literal(const Json& value);  // this exact value, any whitespace

  // json_schema_objects.cpp.
  struct ObjectKeywords {
    const Json* properties = nullptr;  // an object of schemas
    std::vector<std::string> required;  // without repeats
    const Json* additional = nullptr;  // additionalProperties, or what its absence means
  };
  struct ObjectMember {
    std::string key_literal;  // GBNF literal of the key's JSON text, quotes included
    bool required = false;
    std::string value;        // the value's rule name
  };
  Expected<ObjectKeywords> read_object_keywords(const Json& schema, const std::string& pointer) const;
  Expected<std::string> convert_object(const Json& schema, const std::string& pointer,
                                       const std::string& hint);
  std::string object_body(const std::vector<ObjectMember>& members, const std::string& extra_member,
                          const std::string& hint);

  // json_schema_rules.cpp: rule names, shared rules, the grammar text.
  std::string add_rule(const std::string& hint, const std::string& body);
  bool is_rule_name(const std::string& expression) const;
  std::string reserve_rule(const std::string& hint);
  void set_rule(const std::string& name, const std::string& body);
  std::string shared_rule(const std::string& kind);  // "ws", "string", "value", ...
  std::string ws();  // the whitespace expression ("" when compact)
  std::string grammar_text() const;

  const Json& root_schema_;
  JsonSchemaOptions options_;
  std::string root_name_;  // the root rule, which "$ref": "#" names
  int depth_ = 0;          // convert() calls in progress
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body, in order made
  std::map<std::string, size_t> rule_index_;                // name -> index in rules_
  std::map<std::string, std::string> shared_rules_;         // kind -> rule name
  std::map<std::string, std::string> ref_rules_;            // $ref -> rule name
  std::map<std::string, std::string> rule_by_body_;         // body -> rule made by add_rule
};

// Shared helpers of the converter's files.
std::string json_pointer_child(const std::string& pointer, const std::string& key);
std::string describe_pointer(const std::string& pointer);  // "/a/b", or "the schema root"
Status schema_error(const std::string& what, const std::string& pointer);
std::string json_string_char();  // one character of a JSON string, as a GBNF group
std::string json_text(const Json& value);  // compact, invalid UTF-8 replaced (no throw)
// Parts joined by spaces, the empty ones (a compact grammar's whitespace) left out.
std::string gbnf_sequence(std::initializer_list<std::string> parts);
std::string parenthesized(const std::string& inner, const char* suffix = "");  // "(inner)?"
std::string gbnf_alternatives(const std::vector<std::string>& parts);  // "(a | b)", "a"

}  // namespace pagoda::grammar
