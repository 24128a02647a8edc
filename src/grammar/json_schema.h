#pragma once
// The JSON front end: a JSON Schema (or "any JSON") to GBNF text for parse_gbnf.
//
// Supported keywords: type (one or a list), properties, required, additionalProperties
// (false, true or a schema), items (a schema, or false), prefixItems, minItems, maxItems,
// enum, const, anyOf, oneOf (read as anyOf: a grammar cannot exclude a string that two
// branches both match), allOf with one subschema, $ref to any local pointer ("#",
// "#/$defs/...", "#/definitions/...", recursion included), $defs/definitions,
// minLength, maxLength, pattern (through regex_to_gbnf.h, matched anchored), format
// (date, time, date-time, uuid, email; any other format is a plain string), minimum,
// maximum, exclusiveMinimum, exclusiveMaximum (numbers, or draft-4 booleans).
// Annotations are ignored: title, description, default, examples, $schema, $id, $comment,
// deprecated, readOnly, writeOnly. Any other keyword is an error (kInvalidArgument)
// naming it and its JSON pointer, e.g. "unsupported JSON Schema keyword
// 'patternProperties' at /properties/tags"; so are malformed schemas (a wrong type,
// minItems > maxItems, a $ref that points nowhere). `{}` and `true` match any JSON value.
//
// What the grammar generates, where JSON Schema leaves room:
// - Objects: the declared properties in the schema's order, each required one present,
//   each optional one present or not (one whose schema is false never), then required
//   names that have no schema (any value). Extra properties (when additionalProperties
//   allows them) follow the declared ones, under any key. additionalProperties absent
//   means allowed, as JSON Schema says, unless options.strict_properties is set (OpenAI
//   strict mode: no extra properties). An object schema with no properties at all
//   takes any members.
// - Sibling keywords of anyOf/oneOf/allOf are merged into each branch (properties and
//   required joined); with enum or const present the other validation keywords are not
//   applied (the listed values are what is generated). A const or enum value is written
//   as its JSON text (1.0 stays "1.0", strings with their canonical escapes), with the
//   whitespace rule between the tokens of an object or array.
// - Integers: no leading zeros, no fraction or exponent (1.0 is not generated). Bounds
//   give exact digit-level ranges (and no "-0") within the 64-bit integers; beyond
//   them, a bound on the open side is no bound, one on the other side an error.
// - Numbers with bounds: no exponent; exact where the bounds are integers, otherwise
//   the bounds are widened to the enclosing integers (minimum 0.5 acts as 0).
// - Strings: escapes per RFC 8259 (\" \\ \/ \b \f \n \r \t \uXXXX), no raw control
//   characters; with a pattern or format only the canonical escapes (\" \\ \b \f \n \r
//   \t, \u00XX for other controls). minLength/maxLength count code points (an escape is
//   one); beside pattern or a known format they are an error. maxLength and maxItems
//   above options.max_counted_repetition are not enforced.
// - Nesting: schemas deeper than kMaxSchemaDepth are refused.
// - Whitespace (the rule "ws", between tokens: after '{' '[' ':' ',' and before '}' ']'):
//   nothing, one space, or one newline followed by up to max_indent spaces. Compact
//   and pretty-printed JSON (any indentation width, up to max_indent deep) both fit, and
//   a model cannot loop on whitespace. options.compact allows none at all. The document
//   has no whitespace before or after it.

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace pagoda::grammar {

inline constexpr int kMaxSchemaDepth = 100;  // nested schemas, $ref targets included

struct JsonSchemaOptions {
  std::string root_rule = "root";
  // Prefixed to every rule made, the root included ("<prefix><root_rule>"), so several
  // schemas can share one grammar (tool calls: each function's arguments). Rule names
  // keep ASCII letters, digits and '-'; any other character becomes '-'.
  std::string rule_prefix;
  bool compact = false;    // no whitespace between tokens
  int max_indent = 40;     // spaces after a newline in the whitespace rule
  bool strict_properties = false;  // additionalProperties absent means false
  // maxLength and maxItems above this are not enforced: each counted character or item is
  // grammar the compiler works through, and a model seldom runs that long anyway.
  size_t max_counted_repetition = 256;
};

Expected<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                          const JsonSchemaOptions& options = {});

// Any JSON value, or with object_only any JSON object (response_format json_object).
std::string any_json_gbnf(const JsonSchemaOptions& options = {}, bool object_only = false);

}  // namespace pagoda::grammar
