#include "jinja/args.h"

#include <string>

namespace pagoda::jinja {

Expected<std::vector<Value>> bind_args(std::string_view function, CallArgs args,
                                       std::initializer_list<Param> params) {
  const std::string name(function);
  if (args.positional.size() > params.size()) {
    return invalid_argument(name + "() takes at most " + std::to_string(params.size()) +
                            " arguments (" + std::to_string(args.positional.size()) + " given)");
  }
  std::vector<std::optional<Value>> bound(params.size());
  for (size_t i = 0; i < args.positional.size(); ++i) bound[i] = std::move(args.positional[i]);
  for (auto& [key, value] : args.keyword) {
    size_t index = 0;
    for (const Param& param : params) {
      if (param.name == key) break;
      ++index;
    }
    if (index == params.size()) {
      return invalid_argument(name + "() got an unexpected keyword argument '" + key + "'");
    }
    if (bound[index])
      return invalid_argument(name + "() got multiple values for argument '" + key + "'");
    bound[index] = std::move(value);
  }
  std::vector<Value> result;
  result.reserve(params.size());
  size_t index = 0;
  for (const Param& param : params) {
    if (bound[index]) {
      result.push_back(std::move(*bound[index]));
    } else if (param.default_value) {
      result.push_back(*param.default_value);
    } else {
      return invalid_argument(name + "() missing required argument '" + std::string(param.name) +
                              "'");
    }
    ++index;
  }
  return result;
}

Expected<int64_t> int_arg(std::string_view function, std::string_view param, const Value& value) {
  if (value.is_integral()) return value.as_integral();
  return invalid_argument(std::string(function) + "(): '" + std::string(param) +
                          "' must be an integer, not '" + std::string(type_name(value)) + "'");
}

Expected<std::string> string_arg(std::string_view function, std::string_view param,
                                 const Value& value) {
  if (value.is_string()) return value.as_string();
  return invalid_argument(std::string(function) + "(): '" + std::string(param) +
                          "' must be a string, not '" + std::string(type_name(value)) + "'");
}

}  // namespace pagoda::jinja
