#include "grammar/json_schema.h"

#include "grammar/json_schema_converter.h"

namespace pagoda::grammar {

Expected<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema,
                                          const JsonSchemaOptions& options) {
  return JsonSchemaConverter(schema, options).convert_root();
}

std::string any_json_gbnf(const JsonSchemaOptions& options, bool object_only) {
  const Json empty = Json::object();
  return JsonSchemaConverter(empty, options).any_json(object_only);
}

}  // namespace pagoda::grammar
