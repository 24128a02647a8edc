#pragma once
// What the interpreter gets from outside its own statements: jinja2's built-in filters
// and tests, attribute and item access with the sandbox's rules, Python's operators,
// the methods of str / dict / list, and the global functions.

#include <string_view>

#include "core/status.h"
#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/objects.h"
#include "jinja/value.h"

namespace pagoda::jinja {

// By name (aliases included: d, e, count, eq, ...); nullptr for an unknown name.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// obj.name as jinja2's sandbox does it: the Python attribute first (so dict.items is
// the method), then the item; "_private" names and methods that would modify a value
// are unsafe (an Undefined that fails when used). An Undefined object is an error.
Expected<Value> get_attribute(const Value& object, std::string_view name);
// obj[key]: the item first, then (for a string key) the attribute. Missing items of a
// dict or list are Undefined, as in jinja2.
Expected<Value> get_item(const Value& object, const Value& key);
// obj[start:stop:step] of a str, list or tuple; missing parts are None.
Expected<Value> get_slice(Interpreter& interpreter, const Value& object, const Value& start,
                          const Value& stop, const Value& step);
// The str / list / dict method `name`, or nullptr.
MethodFn find_method(const Value& object, std::string_view name);

// Python's operators. Undefined operands fail with the Undefined's hint.
Expected<Value> binary_op(Interpreter& interpreter, BinaryOp op, const Value& a, const Value& b);
Expected<Value> negate(const Value& value);
Expected<Value> unary_plus(const Value& value);
Expected<bool> compare_op(CompareOp op, const Value& a, const Value& b);
// `item in container`.
Expected<bool> contains(const Value& container, const Value& item);
// "%s is %d" % args (Python's printf-style formatting); a result over max_bytes is an
// error.
Expected<std::string> percent_format(std::string_view format, const Value& args, size_t max_bytes);
// "{} is {name}".format(*args, **kwargs).
Expected<std::string> str_format(std::string_view format, const CallArgs& args, size_t max_bytes);

// The error a use of an Undefined raises ("'x' is undefined").
Status undefined_error(const Value& value);

// range, dict, namespace, cycler, joiner, lipsum-free jinja2 globals plus Hugging Face's
// raise_exception and strftime_now, added to `scope`.
void add_globals(Scope& scope);

}  // namespace pagoda::jinja
