// The output format fields: OpenAI's response_format, vLLM's guided_* and
// llama-server's grammar / json_schema. At most one of them constrains a request.

#include <optional>
#include <utility>

#include "server/openai/openai_request_parts.h"

namespace pagoda::server {
namespace {

// A schema given as a value: an object, or (vLLM's guided_json) a string holding one.
ApiResult<Json> read_schema(const Json& value, const std::string& param) {
  if (value.is_object()) return value;
  if (value.is_string()) {
    Json parsed = Json::parse(value.get_ref<const std::string&>(), nullptr,
                              /*allow_exceptions=*/false);
    if (parsed.is_object()) return parsed;
    return invalid_value(param, "Invalid '" + param +
                                    "': the string is not a JSON object (a JSON Schema).");
  }
  return invalid_type(param, "an object", value);
}

ApiResult<std::string> read_non_empty_string(const Json& value, const std::string& param) {
  ApiResult<std::string> text = read_string(value, param);
  if (text.ok() && text->empty()) return empty_string(param);
  return text;
}

// response_format: {"type": "text"} (no constraint), {"type": "json_object"}, or
// {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}.
ApiResult<OutputFormat> read_response_format(const Json& value) {
  const std::string param = "response_format";
  if (!value.is_object()) return invalid_type(param, "an object", value);
  FieldReader reader(value, param);
  const std::optional<std::string> type = reader.string("type");
  if (!reader.ok()) return reader.take_error();
  if (!type) return missing_parameter("response_format.type");
  if (*type == "text") return OutputFormat{TextFormat{}};
  if (*type == "json_object") return OutputFormat{JsonObjectFormat{param}};
  if (*type != "json_schema") {
    return invalid_value("response_format.type",
                         "Invalid value: '" + *type +
                             "'. Supported values are: 'text', 'json_object', and 'json_schema'.");
  }
  const Json* spec = reader.object("json_schema");
  if (!reader.ok()) return reader.take_error();
  if (spec == nullptr) return missing_parameter("response_format.json_schema");
  FieldReader inner(*spec, "response_format.json_schema");
  JsonSchemaFormat format;
  format.param = "response_format.json_schema.schema";
  const std::optional<std::string> name = inner.string("name");
  format.description = inner.string("description").value_or("");
  format.strict = inner.boolean("strict").value_or(false);
  const Json* schema = inner.object("schema");
  if (!inner.ok()) return inner.take_error();
  if (!name) return missing_parameter("response_format.json_schema.name");
  format.name = *name;
  // No schema: any JSON object, as json_object.
  if (schema == nullptr) return OutputFormat{JsonObjectFormat{format.param}};
  format.schema = *schema;
  return OutputFormat{std::move(format)};
}

ApiResult<OutputFormat> read_choices(const Json& value, const std::string& param) {
  if (!value.is_array()) return invalid_type(param, "an array of strings", value);
  if (value.empty()) return empty_array(param);
  ChoiceFormat format;
  format.param = param;
  for (size_t i = 0; i < value.size(); ++i) {
    ApiResult<std::string> choice =
        read_non_empty_string(value[i], param + "[" + std::to_string(i) + "]");
    if (!choice.ok()) return std::move(choice).error();
    format.choices.push_back(std::move(choice).value());
  }
  return OutputFormat{std::move(format)};
}

// One format field by name; the field is present and not null.
ApiResult<OutputFormat> read_format_field(const std::string& key, const Json& value) {
  if (key == "response_format") return read_response_format(value);
  if (key == "guided_json" || key == "json_schema") {
    ApiResult<Json> schema = read_schema(value, key);
    if (!schema.ok()) return std::move(schema).error();
    JsonSchemaFormat format;
    format.schema = std::move(schema).value();
    format.param = key;
    return OutputFormat{std::move(format)};
  }
  if (key == "guided_choice") return read_choices(value, key);
  ApiResult<std::string> text = read_non_empty_string(value, key);
  if (!text.ok()) return std::move(text).error();
  if (key == "guided_regex") return OutputFormat{RegexFormat{std::move(text).value(), key}};
  return OutputFormat{GrammarFormat{std::move(text).value(), key}};  // guided_grammar, grammar
}

}  // namespace

ApiResult<OutputFormat> read_output_format(const Json& document) {
  static const char* const kFields[] = {"response_format", "guided_json",    "guided_regex",
                                        "guided_choice",   "guided_grammar", "grammar",
                                        "json_schema"};
  OutputFormat chosen = TextFormat{};
  std::string chosen_field;
  for (const char* field : kFields) {
    const auto it = document.find(field);
    if (it == document.end() || it->is_null()) continue;
    ApiResult<OutputFormat> format = read_format_field(field, *it);
    if (!format.ok()) return std::move(format).error();
    if (std::holds_alternative<TextFormat>(*format)) continue;  // response_format text
    if (!chosen_field.empty()) {
      return invalid_value(field, "'" + std::string(field) + "' cannot be combined with '" +
                                      chosen_field +
                                      "': a request takes at most one output format.");
    }
    chosen = std::move(format).value();
    chosen_field = field;
  }
  return chosen;
}

}  // namespace pagoda::server
