// jinja2's built-in tests: `x is defined`, `n is divisibleby 3`, `v is string`, ...
#include <cmath>
#include <iterator>

#include "jinja/args.h"
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

using Predicate = bool (*)(const Value&);

// Tests of the value alone.
template <Predicate kPredicate>
Expected<bool> test_of(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("test", std::move(args), {}).status());
  return kPredicate(input);
}

bool is_defined(const Value& v) {
  return !v.is_undefined();
}
bool is_undefined(const Value& v) {
  return v.is_undefined();
}
bool is_none(const Value& v) {
  return v.is_none();
}
bool is_boolean(const Value& v) {
  return v.is_bool();
}
bool is_true(const Value& v) {
  return v.is_bool() && v.as_bool();
}
bool is_false(const Value& v) {
  return v.is_bool() && !v.as_bool();
}
bool is_integer(const Value& v) {
  return v.is_int();
}
bool is_float(const Value& v) {
  return v.is_float();
}
bool is_number(const Value& v) {
  return v.is_number();
}
bool is_string(const Value& v) {
  return v.is_string();
}
bool is_mapping(const Value& v) {
  return v.is_dict();
}
// Undefined counts as iterable, a sequence and callable, as jinja2's Undefined class
// defines __iter__, __len__, __getitem__ and __call__.
bool is_iterable(const Value& v) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool is_sequence(const Value& v) {
  return v.is_string() || (v.is_list() && !v.is_generator()) || v.is_dict() || v.is_undefined();
}
bool is_callable(const Value& v) {
  return v.is_undefined() || (v.is_object() && v.as_object()->callable());
}
bool is_escaped(const Value&) {
  return false;
}  // no Markup values without autoescaping

template <bool kUpper>
bool is_case(const Value& v) {
  const std::string text = to_str(v);
  bool cased = false;
  for (size_t offset = 0; offset < text.size();) {
    const uint32_t cpt = next_codepoint(text, offset);
    if (kUpper ? is_cased_lower(cpt) : is_cased_upper(cpt)) return false;
    cased = cased || (kUpper ? is_cased_upper(cpt) : is_cased_lower(cpt));
  }
  return cased;
}

// value % 2 as Python computes it, for odd / even / divisibleby.
Expected<Value> modulo(Interpreter& interpreter, const Value& value, const Value& divisor) {
  return binary_op(interpreter, BinaryOp::kMod, value, divisor);
}

template <bool kOdd>
Expected<bool> test_parity(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args(kOdd ? "odd" : "even", std::move(args), {}).status());
  PAGODA_ASSIGN_OR_RETURN(Value rest, modulo(interpreter, input, Value(2)));
  return equals(rest, Value(kOdd ? 1 : 0));
}

Expected<bool> test_divisibleby(Interpreter& interpreter, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a,
                          bind_args("divisibleby", std::move(args), {{"num", std::nullopt}}));
  PAGODA_ASSIGN_OR_RETURN(Value rest, modulo(interpreter, input, a[0]));
  return equals(rest, Value(0));
}

template <CompareOp kOp>
Expected<bool> test_compare(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("compare", std::move(args), {{"other", std::nullopt}}));
  return compare_op(kOp, input, a[0]);
}

Expected<bool> test_in(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("in", std::move(args), {{"seq", std::nullopt}}));
  return contains(a[0], input);
}

// `is` identity: None, True and False are singletons, as are Python's small ints;
// objects are the same object. Strings and containers built apart are never `is`.
Expected<bool> test_sameas(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("sameas", std::move(args), {{"other", std::nullopt}}));
  const Value& other = a[0];
  if (input.is_none() || input.is_bool() || input.is_undefined()) {
    return input.kind() == other.kind() && equals(input, other);
  }
  if (input.is_int() && other.is_int()) {
    return input.as_int() == other.as_int() && input.as_int() >= -5 && input.as_int() <= 256;
  }
  if (input.is_object() && other.is_object()) return input.as_object() == other.as_object();
  return false;
}

Expected<bool> test_filter(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("filter", std::move(args), {}).status());
  return input.is_string() && find_filter(input.as_string()) != nullptr;
}

Expected<bool> test_test(Interpreter&, const Value& input, CallArgs args) {
  PAGODA_TRY(bind_args("test", std::move(args), {}).status());
  return input.is_string() && find_test(input.as_string()) != nullptr;
}

struct NamedTest {
  std::string_view name;
  TestFn fn;
};

constexpr NamedTest kTests[] = {
    {"defined", test_of<is_defined>},
    {"undefined", test_of<is_undefined>},
    {"none", test_of<is_none>},
    {"boolean", test_of<is_boolean>},
    {"true", test_of<is_true>},
    {"false", test_of<is_false>},
    {"integer", test_of<is_integer>},
    {"float", test_of<is_float>},
    {"number", test_of<is_number>},
    {"string", test_of<is_string>},
    {"mapping", test_of<is_mapping>},
    {"iterable", test_of<is_iterable>},
    {"sequence", test_of<is_sequence>},
    {"callable", test_of<is_callable>},
    {"escaped", test_of<is_escaped>},
    {"lower", test_of<is_case<false>>},
    {"upper", test_of<is_case<true>>},
    {"odd", test_parity<true>},
    {"even", test_parity<false>},
    {"divisibleby", test_divisibleby},
    {"eq", test_compare<CompareOp::kEq>},
    {"equalto", test_compare<CompareOp::kEq>},
    {"==", test_compare<CompareOp::kEq>},
    {"ne", test_compare<CompareOp::kNe>},
    {"!=", test_compare<CompareOp::kNe>},
    {"lt", test_compare<CompareOp::kLt>},
    {"lessthan", test_compare<CompareOp::kLt>},
    {"<", test_compare<CompareOp::kLt>},
    {"le", test_compare<CompareOp::kLe>},
    {"<=", test_compare<CompareOp::kLe>},
    {"gt", test_compare<CompareOp::kGt>},
    {"greaterthan", test_compare<CompareOp::kGt>},
    {">", test_compare<CompareOp::kGt>},
    {"ge", test_compare<CompareOp::kGe>},
    {">=", test_compare<CompareOp::kGe>},
    {"in", test_in},
    {"sameas", test_sameas},
    {"filter", test_filter},
    {"test", test_test},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const NamedTest& test : kTests) {
    if (test.name == name) return test.fn;
  }
  return nullptr;
}

}  // namespace pagoda::jinja
