// Attribute, item and slice access, with jinja2's sandbox rules.
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace pagoda::jinja {

namespace {

std::string object_description(const Value& object) {
  return quote(std::string(type_name(object)) + " object");
}

Value no_attribute(const Value& object, std::string_view name) {
  return Value::undefined(object_description(object) + " has no attribute '" + std::string(name) +
                          "'");
}

// ImmutableSandboxedEnvironment: methods that would modify a list or dict, and
// Python's internals (__class__ and the like), are off limits.
bool is_unsafe(const Value& object, std::string_view name) {
  if (name.size() >= 2 && name.substr(0, 2) == "__") return true;
  static constexpr std::string_view kListMutators[] = {"append", "clear",  "extend",  "insert",
                                                       "pop",    "remove", "reverse", "sort"};
  static constexpr std::string_view kDictMutators[] = {"clear", "pop", "popitem", "setdefault",
                                                       "update"};
  if (object.is_list() && !object.is_tuple()) {
    for (std::string_view m : kListMutators) {
      if (m == name) return true;
    }
  }
  if (object.is_dict()) {
    for (std::string_view m : kDictMutators) {
      if (m == name) return true;
    }
  }
  return false;
}

Value unsafe(const Value& object, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" +
                          std::string(type_name(object)) + "' object is unsafe.");
}

// The Python attribute `name` of `object`, if it has one.
std::optional<Value> python_attribute(const Value& object, std::string_view name) {
  if (is_unsafe(object, name)) return unsafe(object, name);
  if (MethodFn method = find_method(object, name)) {
    return Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(object, name, method)));
  }
  if (object.is_object()) {
    Value value = object.as_object()->attribute(name);
    if (!value.is_undefined()) return value;
  }
  return std::nullopt;
}

// Python's index normalisation for obj[i]: negative counts from the end.
std::optional<size_t> normalize_index(int64_t index, size_t size) {
  const auto n = static_cast<int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<size_t>(index);
}

}  // namespace

Status undefined_error(const Value& value) {
  return invalid_argument(value.undefined_hint());
}

Expected<Value> get_attribute(const Value& object, std::string_view name) {
  if (object.is_undefined()) return undefined_error(object);
  if (std::optional<Value> attribute = python_attribute(object, name)) return *attribute;
  if (object.is_dict()) {
    if (const Value* value = object.as_dict().find(name)) return *value;
  }
  if (object.is_object()) return object.as_object()->attribute(name);
  return no_attribute(object, name);
}

Expected<Value> get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) return undefined_error(object);
  if (object.is_generator()) return Value::undefined("'generator' object is not subscriptable");
  if (object.is_list() && key.is_integral()) {
    if (auto index = normalize_index(key.as_integral(), object.items().size()))
      return object.items()[*index];
    return Value::undefined(object_description(object) + " has no element " + repr(key));
  }
  if (object.is_string() && key.is_integral()) {
    const std::string& text = object.as_string();
    const std::vector<size_t> offsets = codepoint_offsets(text);
    if (auto index = normalize_index(key.as_integral(), offsets.size() - 1)) {
      return Value(
          std::string_view(text).substr(offsets[*index], offsets[*index + 1] - offsets[*index]));
    }
    return Value::undefined(object_description(object) + " has no element " + repr(key));
  }
  if (object.is_dict()) {
    if (const Value* value = object.as_dict().find(key)) return *value;
  }
  if (key.is_string()) {
    if (std::optional<Value> attribute = python_attribute(object, key.as_string()))
      return *attribute;
    return no_attribute(object, key.as_string());
  }
  return Value::undefined(object_description(object) + " has no element " + repr(key));
}

namespace {

Expected<std::optional<int64_t>> slice_part(const Value& value) {
  if (value.is_none()) return std::optional<int64_t>();
  if (value.is_integral()) return std::optional<int64_t>(value.as_integral());
  if (value.is_undefined()) return undefined_error(value);
  return invalid_argument("slice indices must be integers or None");
}

// The indices obj[start:stop:step] selects from `size` items, as Python computes them.
Expected<std::vector<size_t>> slice_indices(const Value& start_value, const Value& stop_value,
                                            const Value& step_value, size_t size) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<int64_t> start, slice_part(start_value));
  PAGODA_ASSIGN_OR_RETURN(std::optional<int64_t> stop, slice_part(stop_value));
  PAGODA_ASSIGN_OR_RETURN(std::optional<int64_t> step_part, slice_part(step_value));
  const int64_t step = step_part.value_or(1);
  if (step == 0) return invalid_argument("slice step cannot be zero");
  const auto n = static_cast<int64_t>(size);
  auto clamp = [&](std::optional<int64_t> index, int64_t if_missing) {
    if (!index) return if_missing;
    int64_t i = *index;
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t first = clamp(start, step > 0 ? 0 : n - 1);
  const int64_t last = clamp(stop, step > 0 ? n : -1);
  std::vector<size_t> indices;
  for (int64_t i = first; step > 0 ? i < last : i > last; i += step) {
    indices.push_back(static_cast<size_t>(i));
    if ((step > 0 && i > n - step) || (step < 0 && i < -(step + 1))) break;  // never overflow
  }
  return indices;
}

}  // namespace

Expected<Value> get_slice(Interpreter& interpreter, const Value& object, const Value& start,
                          const Value& stop, const Value& step) {
  if (object.is_undefined()) return undefined_error(object);
  if (object.is_generator()) return Value::undefined("'generator' object is not subscriptable");
  if (object.is_list()) {
    PAGODA_ASSIGN_OR_RETURN(std::vector<size_t> indices,
                            slice_indices(start, stop, step, object.items().size()));
    PAGODA_TRY(interpreter.charge(static_cast<int64_t>(indices.size())));
    std::vector<Value> items;
    items.reserve(indices.size());
    for (size_t i : indices) items.push_back(object.items()[i]);
    return object.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (object.is_string()) {
    const std::string& text = object.as_string();
    const std::vector<size_t> offsets = codepoint_offsets(text);
    PAGODA_ASSIGN_OR_RETURN(std::vector<size_t> indices,
                            slice_indices(start, stop, step, offsets.size() - 1));
    PAGODA_TRY(interpreter.charge(static_cast<int64_t>(indices.size())));
    std::string out;
    for (size_t i : indices) out.append(text, offsets[i], offsets[i + 1] - offsets[i]);
    return Value(std::move(out));
  }
  return invalid_argument(quote(type_name(object)) + " object is not subscriptable");
}

}  // namespace pagoda::jinja
