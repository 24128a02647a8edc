#pragma once
// Binding call arguments to parameters the way Python does, for the built-in filters,
// tests, functions and methods: positional arguments fill parameters in order, keyword
// arguments by name, missing ones take their defaults.
//
//   PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("indent", std::move(args),
//                                             {{"width", Value(4)}, {"first", Value(false)}}));
//   a[0] is width, a[1] is first.

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "jinja/value.h"

namespace pagoda::jinja {

struct Param {
  std::string_view name;
  std::optional<Value> default_value;  // nullopt: required
};

// Errors as Python's TypeError: "indent() got an unexpected keyword argument 'x'",
// "indent() takes at most 3 arguments (4 given)", "indent() missing argument 'width'".
Expected<std::vector<Value>> bind_args(std::string_view function, CallArgs args,
                                       std::initializer_list<Param> params);

// Argument type checks, with errors naming the function and parameter.
Expected<int64_t> int_arg(std::string_view function, std::string_view param, const Value& value);
Expected<std::string> string_arg(std::string_view function, std::string_view param,
                                 const Value& value);

}  // namespace pagoda::jinja
