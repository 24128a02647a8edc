// JsonSchemaConverter, one JSON type at a time: strings, numbers, arrays, and the
// literal of a const or enum value (objects: json_schema_objects.cpp).
#include <algorithm>
#include <cmath>
#include <optional>

#include "grammar/choice_gbnf.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_formats.h"
#include "grammar/json_schema_ranges.h"
#include "grammar/regex_to_gbnf.h"

namespace pagoda::grammar {
namespace {

constexpr const char* kQuote = "\"\\\"\"";  // the GBNF literal of one '"'

// A non-negative integer keyword (minLength, maxItems, ...), if present.
Expected<std::optional<size_t>> count_keyword(const Json& schema, const char* keyword,
                                              const std::string& pointer) {
  if (!schema.contains(keyword)) return std::optional<size_t>();
  const Json& value = schema[keyword];
  const bool integral = value.is_number_integer() ||
                        (value.is_number_float() && std::floor(value.get<double>()) == value.get<double>());
  if (!integral || value.get<double>() < 0) {
    return schema_error(std::string(keyword) + " must be a non-negative integer",
                        json_pointer_child(pointer, keyword));
  }
  return std::optional<size_t>(static_cast<size_t>(std::min(value.get<double>(), 1e15)));
}

// minLength/maxLength or minItems/maxItems. Each counted step is grammar to compile: a
// maximum above max_counted is not enforced, a minimum above the grammar's repetition
// limit is an error.
Expected<std::pair<size_t, std::optional<size_t>>> count_bounds(const Json& schema, const char* min_keyword,
                                                                const char* max_keyword,
                                                                const std::string& pointer, size_t max_counted) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<size_t> min, count_keyword(schema, min_keyword, pointer));
  PAGODA_ASSIGN_OR_RETURN(std::optional<size_t> max, count_keyword(schema, max_keyword, pointer));
  if (min && max && *min > *max) {
    return schema_error(std::string(min_keyword) + " above " + max_keyword, pointer);
  }
  if (min && *min > static_cast<size_t>(Grammar::kMaxRepetition)) {
    return schema_error(std::string(min_keyword) + " above " + std::to_string(Grammar::kMaxRepetition) +
                            " is unsupported", json_pointer_child(pointer, min_keyword));
  }
  if (max && *max > max_counted) max.reset();
  return std::make_pair(min.value_or(0), max);
}

// One bound of a number: its value and whether it is exclusive.
struct Bound {
  long double value = 0;
  bool exclusive = false;
};

// minimum/exclusiveMinimum (lower) or maximum/exclusiveMaximum (upper), the tighter one;
// exclusiveMinimum may also be draft 4's boolean beside minimum.
Expected<std::optional<Bound>> read_bound(const Json& schema, bool lower, const std::string& pointer) {
  const char* inclusive_keyword = lower ? "minimum" : "maximum";
  const char* exclusive_keyword = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  std::optional<Bound> bound;
  bool draft4_exclusive = false;
  if (schema.contains(exclusive_keyword)) {
    const Json& value = schema[exclusive_keyword];
    if (value.is_boolean()) {
      draft4_exclusive = value.get<bool>();
    } else if (value.is_number()) {
      bound = Bound{value.get<long double>(), true};
    } else {
      return schema_error(std::string(exclusive_keyword) + " must be a number",
                          json_pointer_child(pointer, exclusive_keyword));
    }
  }
  if (schema.contains(inclusive_keyword)) {
    const Json& value = schema[inclusive_keyword];
    if (!value.is_number()) {
      return schema_error(std::string(inclusive_keyword) + " must be a number",
                          json_pointer_child(pointer, inclusive_keyword));
    }
    const Bound inclusive{value.get<long double>(), draft4_exclusive};
    const bool tighter = !bound || (lower ? inclusive.value > bound->value : inclusive.value < bound->value);
    if (tighter) bound = inclusive;
  }
  return bound;
}

// The 64-bit range, as long doubles (exact at these magnitudes).
constexpr long double kInt64Min = -9223372036854775808.0L;
constexpr long double kInt64Max = 9223372036854775807.0L;

}  // namespace

Expected<std::string> JsonSchemaConverter::convert_string(const Json& schema, const std::string& pointer) {
  const bool has_lengths = schema.contains("minLength") || schema.contains("maxLength");
  if (schema.contains("format")) {
    if (!schema["format"].is_string()) {
      return schema_error("format must be a string", json_pointer_child(pointer, "format"));
    }
    const std::optional<std::string> format = string_format_gbnf(schema["format"].get<std::string>());
    if (format && !schema.contains("pattern")) {
      if (has_lengths) return schema_error("minLength/maxLength beside format is unsupported", pointer);
      return gbnf_sequence({kQuote, *format, kQuote});
    }
  }
  if (schema.contains("pattern")) {
    const std::string pattern_pointer = json_pointer_child(pointer, "pattern");
    if (!schema["pattern"].is_string()) return schema_error("pattern must be a string", pattern_pointer);
    if (has_lengths) return schema_error("minLength/maxLength beside pattern is unsupported", pointer);
    RegexOptions regex_options;
    regex_options.json_string_content = true;
    Expected<std::string> content = regex_to_gbnf_expression(schema["pattern"].get<std::string>(), regex_options);
    if (!content.ok()) return schema_error(content.status().message(), pattern_pointer);
    return gbnf_sequence({kQuote, *content, kQuote});
  }
  if (!has_lengths) return shared_rule("string");
  PAGODA_ASSIGN_OR_RETURN(auto lengths, count_bounds(schema, "minLength", "maxLength", pointer, options_.max_counted_repetition));
  return gbnf_sequence({kQuote, gbnf_repeat(json_string_char(), lengths.first, lengths.second), kQuote});
}

Expected<std::string> JsonSchemaConverter::convert_number(const Json& schema, bool integer,
                                                          const std::string& pointer) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<Bound> lower, read_bound(schema, /*lower=*/true, pointer));
  PAGODA_ASSIGN_OR_RETURN(std::optional<Bound> upper, read_bound(schema, /*lower=*/false, pointer));
  if (!lower && !upper) return shared_rule(integer ? "integer" : "number");
  if (lower && upper && (lower->value > upper->value ||
                         (lower->value == upper->value && (lower->exclusive || upper->exclusive)))) {
    return schema_error("the range from minimum to maximum is empty", pointer);
  }
  // Bounds beyond the 64-bit integers: none on the open side, an error on the other.
  if (lower && lower->value < kInt64Min) lower.reset();
  if (upper && upper->value > kInt64Max) upper.reset();
  if ((lower && lower->value > kInt64Max) || (upper && upper->value < kInt64Min)) {
    return schema_error("a bound beyond the 64-bit integers", pointer);
  }
  if (integer) {
    std::optional<int64_t> min, max;
    if (lower) min = static_cast<int64_t>(lower->exclusive ? std::floor(lower->value) + 1 : std::ceil(lower->value));
    if (upper) max = static_cast<int64_t>(upper->exclusive ? std::ceil(upper->value) - 1 : std::floor(upper->value));
    if (min && max && *min > *max) return schema_error("no integer between minimum and maximum", pointer);
    return integer_range_gbnf(min, max);
  }
  // Integer bounds are exact; others widen to the enclosing integers, inclusive.
  std::optional<NumberBound> low, high;
  if (lower) {
    const long double floor = std::floor(lower->value);
    low = NumberBound{static_cast<int64_t>(floor), floor == lower->value && lower->exclusive};
  }
  if (upper) {
    const long double ceil = std::ceil(upper->value);
    high = NumberBound{static_cast<int64_t>(ceil), ceil == upper->value && upper->exclusive};
  }
  const std::string body = number_range_gbnf(low, high);
  if (body.empty()) return schema_error("the range from minimum to maximum is empty", pointer);
  return body;
}

Expected<std::string> JsonSchemaConverter::convert_array(const Json& schema, const std::string& pointer,
                                                         const std::string& hint) {
  std::vector<std::string> prefix;  // rule names of the leading items
  const Json* prefix_items = schema.contains("prefixItems") ? &schema["prefixItems"] : nullptr;
  std::string prefix_keyword = "prefixItems";
  const Json* items = schema.contains("items") ? &schema["items"] : nullptr;
  if (items && items->is_array()) {  // draft 4 to 2019-09: items as a list is prefixItems
    if (prefix_items) return schema_error("items as a list beside prefixItems", pointer);
    prefix_items = items;
    prefix_keyword = "items";
    items = nullptr;
  }
  if (prefix_items) {
    const std::string prefix_pointer = json_pointer_child(pointer, prefix_keyword);
    if (!prefix_items->is_array()) return schema_error("prefixItems must be an array of schemas", prefix_pointer);
    for (size_t i = 0; i < prefix_items->size(); ++i) {
      PAGODA_ASSIGN_OR_RETURN(std::string item, rule_for((*prefix_items)[i], json_pointer_child(prefix_pointer, std::to_string(i)),
                                                         hint + "-item-" + std::to_string(i)));
      prefix.push_back(std::move(item));
    }
  }
  PAGODA_ASSIGN_OR_RETURN(auto counts, count_bounds(schema, "minItems", "maxItems", pointer, options_.max_counted_repetition));
  auto [min, max] = counts;
  const size_t k = prefix.size();
  std::string item;  // rule name of the items after the prefix; empty: none allowed
  if (!items) {
    item = shared_rule("value");
  } else if (items->is_boolean() && !items->get<bool>()) {
    max = std::min(max.value_or(k), k);
  } else {
    PAGODA_ASSIGN_OR_RETURN(item, rule_for(*items, json_pointer_child(pointer, "items"), hint + "-item"));
  }
  if (max && min > *max) return schema_error("minItems above the items allowed", pointer);
  if (k == 0 && !items && !schema.contains("minItems") && !schema.contains("maxItems")) {
    return shared_rule("array");
  }
  const std::string space = ws();
  const std::string comma = gbnf_sequence({"\",\"", space});
  // The items after the prefix, each after a comma (after_prefix: how many may follow).
  std::string rest;
  if (!max || *max > k) {
    const size_t rest_min = min > k ? min - k : 0;
    const std::optional<size_t> rest_max = max ? std::optional<size_t>(*max - k) : std::nullopt;
    if (k == 0) {
      rest = gbnf_sequence({item, gbnf_repeat(parenthesized(gbnf_sequence({comma, item})), rest_min > 0 ? rest_min - 1 : 0,
                                         rest_max ? std::optional<size_t>(*rest_max - 1) : std::nullopt)});
    } else {
      rest = gbnf_repeat(parenthesized(gbnf_sequence({comma, item})), rest_min, rest_max);
    }
  }
  // Prefix items from last to first: item j, then (when j + 1 < max) the rest, optional once
  // min is reached.
  const size_t prefix_used = max ? std::min(k, *max) : k;
  for (size_t j = prefix_used; j-- > 0;) {
    std::string after = rest;
    if (j + 1 < prefix_used && j + 1 >= min) after = parenthesized(after, "?");
    rest = gbnf_sequence({j > 0 ? comma : "", prefix[j], after});
  }
  const std::string empty = gbnf_sequence({"\"[\"", space, "\"]\""});
  if (rest.empty()) return empty;
  const std::string full = gbnf_sequence({"\"[\"", space, rest, space, "\"]\""});
  return min == 0 ? gbnf_alternatives({empty, full}) : full;
}

std::string JsonSchemaConverter::value_literal(const Json& value) {
  const std::string space = ws();
  if (value.is_object() && !value.empty()) {
    std::string members;
    for (const auto& [key, member] : value.items()) {
      if (!members.empty()) members = gbnf_sequence({members, "\",\"", space});
      members = gbnf_sequence({members, gbnf_literal(json_text(Json(key))), "\":\"", space, value_literal(member)});
    }
    return parenthesized(gbnf_sequence({"\"{\"", space, members, space, "\"}\""}));
  }
  if (value.is_array() && !value.empty()) {
    std::string elements;
    for (const Json& element : value) {
      if (!elements.empty()) elements = gbnf_sequence({elements, "\",\"", space});
      elements = gbnf_sequence({elements, value_literal(element)});
    }
    return parenthesized(gbnf_sequence({"\"[\"", space, elements, space, "\"]\""}));
  }
  if (value.is_object()) return parenthesized(gbnf_sequence({"\"{\"", space, "\"}\""}));
  if (value.is_array()) return parenthesized(gbnf_sequence({"\"[\"", space, "\"]\""}));
  return gbnf_literal(json_text(value));
}

}  // namespace pagoda::grammar
