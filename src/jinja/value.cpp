#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "jinja/text.h"

namespace pagoda::jinja {

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void DictData::insert_or_assign(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

std::string Object::repr() const {
  return std::string("<").append(type_name()).append(" object>");
}

Value Object::attribute(std::string_view name) const {
  return Value::undefined(quote(std::string(type_name()) + " object") + " has no attribute '" +
                          std::string(name) + "'");
}

Expected<Value> Object::call(Interpreter&, CallArgs) {
  return invalid_argument(quote(type_name()) + " object is not callable");
}

Status Object::set_attribute(std::string_view, Value) {
  return invalid_argument("can only assign attributes of a namespace() object, not of '" +
                          std::string(type_name()) + "'");
}

namespace {

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a + b < a ? UINT64_MAX : a + b;
}

Value make_sequence(std::vector<Value> items, bool is_tuple, const char* view_name = nullptr) {
  auto data = std::make_shared<ListData>();
  data->view_name = view_name;
  uint32_t deepest = 0;
  uint64_t size = 1;
  for (const Value& item : items) {
    deepest = std::max(deepest, item.depth());
    size = saturating_add(size, item.size());
  }
  data->size = size;
  data->items = std::move(items);
  data->is_tuple = is_tuple;
  data->depth = deepest + 1;
  return Value(std::shared_ptr<const ListData>(std::move(data)));
}

}  // namespace

Value Value::list(std::vector<Value> items) {
  return make_sequence(std::move(items), false);
}

Value Value::tuple(std::vector<Value> items) {
  return make_sequence(std::move(items), true);
}

Value Value::generator(std::vector<Value> items) {
  Value value = make_sequence(std::move(items), false);
  const_cast<ListData&>(value.as_list()).is_generator = true;  // not shared yet
  return value;
}

Value Value::failed_generator(Status error) {
  Value value = generator({});
  const_cast<ListData&>(value.as_list()).deferred_error =
      std::make_shared<const Status>(std::move(error));
  return value;
}

Value Value::range(std::vector<Value> items, std::string repr_text) {
  Value value = make_sequence(std::move(items), false);
  const_cast<ListData&>(value.as_list()).repr_text = std::move(repr_text);  // not shared yet
  return value;
}

Value Value::dict_view(const char* name, std::vector<Value> items) {
  return make_sequence(std::move(items), false, name);
}

Value Value::dict(DictData data) {
  uint32_t deepest = 0;
  uint64_t size = 1;
  for (const auto& [key, value] : data.entries) {
    deepest = std::max({deepest, key.depth(), value.depth()});
    size = saturating_add(size, saturating_add(key.size(), value.size()));
  }
  data.depth = deepest + 1;
  data.size = size;
  return Value(std::shared_ptr<const DictData>(std::make_shared<DictData>(std::move(data))));
}

uint64_t Value::size() const {
  if (is_list()) return as_list().size;
  if (is_dict()) return as_dict().size;
  return 1;
}

uint32_t Value::depth() const {
  if (is_list()) return as_list().depth;
  if (is_dict()) return as_dict().depth;
  return 0;
}

double Value::as_double() const {
  if (is_float()) return as_float();
  return static_cast<double>(as_integral());
}

bool truthy(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return value.as_bool();
    case Value::Kind::kInt:
      return value.as_int() != 0;
    case Value::Kind::kFloat:
      return value.as_float() != 0.0;
    case Value::Kind::kString:
      return !value.as_string().empty();
    case Value::Kind::kList:
      return value.is_generator() || !value.items().empty();
    case Value::Kind::kDict:
      return !value.as_dict().entries.empty();
    case Value::Kind::kObject:
      return true;
  }
  return false;
}

namespace {

bool lists_equal(const std::vector<Value>& a, const std::vector<Value>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!equals(a[i], b[i])) return false;
  }
  return true;
}

bool dicts_equal(const DictData& a, const DictData& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (const auto& [key, value] : a.entries) {
    const Value* other = b.find(key);
    if (other == nullptr || !equals(value, *other)) return false;
  }
  return true;
}

}  // namespace

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_integral() == b.as_integral();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    // A list never equals a tuple in Python.
    // The same container is equal to itself without a walk, as in Python.
    case Value::Kind::kList:
      if (a.is_generator() || b.is_generator()) return &a.as_list() == &b.as_list();
      return &a.as_list() == &b.as_list() ||
             (a.is_tuple() == b.is_tuple() && lists_equal(a.items(), b.items()));
    case Value::Kind::kDict:
      return &a.as_dict() == &b.as_dict() || dicts_equal(a.as_dict(), b.as_dict());
    case Value::Kind::kObject:
      return a.as_object() == b.as_object();
    default:
      return false;  // numbers were handled above
  }
}

Expected<int> compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) {
      return a.as_integral() < b.as_integral() ? -1 : a.as_integral() > b.as_integral() ? 1 : 0;
    }
    const double x = a.as_double();
    const double y = b.as_double();
    return x < y ? -1 : x > y ? 1 : 0;  // NaN compares as "equal": every comparison false
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() && !a.is_generator() &&
      !b.is_generator()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return invalid_argument(quote(op) + " not supported between instances of '" +
                          std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
}

std::string_view type_name(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return value.is_generator() ? "generator" : value.is_tuple() ? "tuple" : "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kObject:
      return value.as_object()->type_name();
  }
  return "object";
}

Expected<int64_t> length(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return int64_t{0};
    case Value::Kind::kString:
      return static_cast<int64_t>(codepoint_count(value.as_string()));
    case Value::Kind::kList:
      if (value.is_generator()) break;
      return static_cast<int64_t>(value.items().size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(value.as_dict().entries.size());
    default:
      break;
  }
  return invalid_argument("object of type '" + std::string(type_name(value)) + "' has no len()");
}

Expected<std::vector<Value>> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return std::vector<Value>{};
    case Value::Kind::kList:
      if (value.as_list().deferred_error) return *value.as_list().deferred_error;
      return value.items();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(value.as_dict().entries.size());
      for (const auto& entry : value.as_dict().entries) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::kString: {
      const std::string& text = value.as_string();
      const std::vector<size_t> offsets = codepoint_offsets(text);
      std::vector<Value> chars;
      chars.reserve(offsets.size() - 1);
      for (size_t i = 0; i + 1 < offsets.size(); ++i) {
        chars.emplace_back(std::string_view(text).substr(offsets[i], offsets[i + 1] - offsets[i]));
      }
      return chars;
    }
    default:
      return invalid_argument(quote(type_name(value)) + " object is not iterable");
  }
}

namespace {

// repr() recurses through containers and namespace() objects, which can hold
// themselves (ns.self = ns) or chain deeper than any container depth limit sees.
// Past kMaxValueDepth levels it prints "...", and once one top-level repr() has
// produced kMaxReprBytes it stops walking: printing is bounded whatever the value.
constexpr size_t kMaxReprBytes = size_t{64} << 20;
thread_local uint32_t repr_depth = 0;
thread_local size_t repr_bytes = 0;

struct ReprDepth {
  ReprDepth() {
    if (repr_depth++ == 0) repr_bytes = 0;
  }
  ~ReprDepth() { --repr_depth; }
  bool too_deep() const { return repr_depth > kMaxValueDepth || repr_bytes > kMaxReprBytes; }
};

// Appends a piece of a container's repr, counting it against the byte budget.
void append_piece(std::string& out, const std::string& piece) {
  repr_bytes += piece.size();
  out += piece;
}

std::string repr_sequence(const Value& value) {
  if (value.is_generator()) return "<generator object>";
  if (!value.as_list().repr_text.empty()) return value.as_list().repr_text;
  const auto& items = value.items();
  std::string out = value.is_tuple() ? "(" : "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    append_piece(out, repr(items[i]));
    if (repr_bytes > kMaxReprBytes) return out + "...";
  }
  if (value.is_tuple() && items.size() == 1) out += ",";
  out += value.is_tuple() ? ")" : "]";
  if (value.as_list().view_name != nullptr)
    return std::string(value.as_list().view_name) + "(" + out + ")";
  return out;
}

std::string repr_dict(const DictData& dict) {
  std::string out = "{";
  for (size_t i = 0; i < dict.entries.size(); ++i) {
    if (i > 0) out += ", ";
    append_piece(out, repr(dict.entries[i].first) + ": " + repr(dict.entries[i].second));
    if (repr_bytes > kMaxReprBytes) return out + "...";
  }
  return out + "}";
}

}  // namespace

std::string to_str(const Value& value) {
  if (value.is_string()) return value.as_string();
  if (value.is_undefined()) return "";
  return repr(value);
}

std::string repr(const Value& value) {
  const ReprDepth depth;
  if (depth.too_deep()) return "...";
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(value.as_int());
    case Value::Kind::kFloat:
      return repr_float(value.as_float());
    case Value::Kind::kString:
      return repr_string(value.as_string());
    case Value::Kind::kList:
      return repr_sequence(value);
    case Value::Kind::kDict:
      return repr_dict(value.as_dict());
    case Value::Kind::kObject:
      return value.as_object()->repr();
  }
  return "";
}

}  // namespace pagoda::jinja
