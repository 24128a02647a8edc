#pragma once
// Values of the template language. Chat templates are written against Python's data
// model as jinja2 exposes it, so a Value models exactly the Python types templates meet:
// None, bool, int, float, str, list, tuple, dict, jinja2's Undefined, and a few objects
// (macros, `loop`, namespace(), built-in functions and bound methods).
//
// Lists and dicts are shared and immutable once built: the templates run in a sandbox
// where, as in jinja2's ImmutableSandboxedEnvironment, nothing may modify them
// (namespace() objects are the one mutable thing, and they are Objects). Copying a
// Value is therefore cheap for containers. Strings are UTF-8; where Python counts
// characters (len, indexing, slicing) the interpreter counts code points.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/status.h"

namespace pagoda::jinja {

class Value;
class Interpreter;

// jinja2's default Undefined: prints as "", iterates as empty, is false, and fails any
// other use with `hint` ("'x' is undefined", "'dict object' has no attribute 'y'").
struct Undefined {
  std::string hint;
};
struct None {};

// Containers hold containers at most this deep: printing, comparing and freeing them
// recurse, so the interpreter refuses to build deeper ones (an error, not a crash).
constexpr uint32_t kMaxValueDepth = 256;
// Containers hold at most this many values in all, nested ones included and shared ones
// counted each time they appear: comparing and printing walk every one of them.
constexpr uint64_t kMaxValueItems = uint64_t{1} << 24;

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;  // a Python tuple: prints as (a, b)
  uint32_t depth = 1;     // 1 + the deepest container among the items
  uint64_t size = 1;      // 1 + the sizes of the items (saturating)
  // dict.keys() / values() / items() give lists that print as Python's views do:
  // "dict_keys(['a'])". Null for plain lists and tuples.
  const char* view_name = nullptr;
  // The lazy results of map, select, unique, items, ... (Python generators): always
  // true, no len(), no indexing, printed as "<generator object>".
  bool is_generator = false;
  // A generator whose filter failed on its input: Python raises only when the
  // generator is consumed, so iterating it gives this error (the value is still true).
  std::shared_ptr<const Status> deferred_error;
  // Printed instead of the items when set: range(3) prints as "range(0, 3)".
  std::string repr_text;
};

// A Python dict: keys in insertion order, each key at most once.
struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  uint32_t depth = 1;  // 1 + the deepest container among keys and values (set by Value::dict)
  uint64_t size = 1;   // 1 + the sizes of keys and values (saturating; set by Value::dict)

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Adds the pair, or replaces the value of an equal key in place (Python's d[k] = v).
  void insert_or_assign(Value key, Value value);
};

// Arguments of a call: positional first, then keyword, as Python passes them.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Everything that is neither data nor Undefined: functions, macros, loop, namespace.
class Object {
 public:
  virtual ~Object() = default;
  // The Python type name errors and the `repr` show ("function", "LoopContext").
  virtual std::string_view type_name() const = 0;
  virtual std::string repr() const;
  // obj.name: an Undefined (with a hint) when there is no such attribute.
  virtual Value attribute(std::string_view name) const;
  virtual bool callable() const { return false; }
  virtual Expected<Value> call(Interpreter& interpreter, CallArgs args);
  // Only namespace() objects accept {% set ns.name = value %}.
  virtual Status set_attribute(std::string_view name, Value value);
  // Drops the values the object holds: the interpreter calls this on the objects a
  // render made when it ends, so reference cycles among them cannot leak.
  virtual void release_references() {}
};

class Value {
 public:
  // In variant order.
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kObject
  };

  Value() : data_(Undefined{}) {}
  Value(None) : data_(None{}) {}                                     // NOLINT: implicit by design
  Value(Undefined u) : data_(std::move(u)) {}                        // NOLINT
  Value(bool b) : data_(b) {}                                        // NOLINT
  Value(int64_t i) : data_(i) {}                                     // NOLINT
  Value(int i) : data_(int64_t{i}) {}                                // NOLINT
  Value(double d) : data_(d) {}                                      // NOLINT
  Value(std::string s) : data_(std::move(s)) {}                      // NOLINT
  Value(std::string_view s) : data_(std::string(s)) {}               // NOLINT
  Value(const char* s) : data_(std::string(s)) {}                    // NOLINT
  Value(std::shared_ptr<const ListData> l) : data_(std::move(l)) {}  // NOLINT
  Value(std::shared_ptr<const DictData> d) : data_(std::move(d)) {}  // NOLINT
  Value(std::shared_ptr<Object> o) : data_(std::move(o)) {}          // NOLINT

  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(DictData data);
  static Value dict_view(const char* name, std::vector<Value> items);  // name: "dict_keys", ...
  static Value generator(std::vector<Value> items);
  static Value failed_generator(Status error);  // see ListData::deferred_error
  static Value range(std::vector<Value> items, std::string repr_text);
  static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // Python's numbers: bool is an int subclass.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }  // list or tuple
  bool is_tuple() const { return is_list() && as_list().is_tuple; }
  bool is_generator() const { return is_list() && as_list().is_generator; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_object() const { return kind() == Kind::kObject; }

  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const { return std::get<int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // bool or int as int64 (is_integral() must hold).
  int64_t as_integral() const { return is_bool() ? int64_t{as_bool()} : as_int(); }
  // Any number as double (is_number() must hold).
  double as_double() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(data_); }
  const std::vector<Value>& items() const { return as_list().items; }
  const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(data_); }
  const std::shared_ptr<Object>& as_object() const {
    return std::get<std::shared_ptr<Object>>(data_);
  }
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }
  // Nesting depth: 0 for scalars and objects, 1 for a flat list or dict.
  uint32_t depth() const;
  // Values in all: 1 for scalars and objects, 1 + the items' sizes for containers.
  uint64_t size() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<const ListData>,
               std::shared_ptr<const DictData>, std::shared_ptr<Object>>
      data_;
};

// 'text' in single quotes, for messages. (Also sidesteps GCC 12's false -Wrestrict
// warning on "literal" + std::string temporaries.)
inline std::string quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

// Python's truth value (Undefined is false).
bool truthy(const Value& value);
// Python's ==: numbers compare by value across bool/int/float, containers deeply,
// objects by identity, Undefined equals only Undefined.
bool equals(const Value& a, const Value& b);
// Python's ordering for <, <=, >, >= and sorting: numbers, strings (by code point, which
// is UTF-8 byte order), lists/tuples (lexicographic). Other pairs are an error, as
// Python's TypeError: "'<' not supported between instances of 'str' and 'int'".
Expected<int> compare(const Value& a, const Value& b, std::string_view op = "<");

// Python's type name: "str", "int", "list", "dict", "NoneType", "Undefined", ...
std::string_view type_name(const Value& value);
// len(): code points of a string, items of a list/dict; nullopt-like error for others.
Expected<int64_t> length(const Value& value);
// Iterating a value as a for loop does: list items, dict keys, string characters;
// Undefined iterates as empty. Others: "'int' object is not iterable".
Expected<std::vector<Value>> iterate(const Value& value);

// str(value) as Python prints it ("None", "True", "[1, 'a']", "1.0"; Undefined -> "").
std::string to_str(const Value& value);
// repr(value): strings quoted and escaped as Python does.
std::string repr(const Value& value);

}  // namespace pagoda::jinja
