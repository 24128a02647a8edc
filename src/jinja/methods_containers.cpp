// Methods of dict, list and tuple that read (the sandbox allows no others).
#include "jinja/args.h"
#include "jinja/builtins.h"

namespace pagoda::jinja {

namespace {

Expected<Value> dict_get(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("get", std::move(args),
                                            {{"key", std::nullopt}, {"default", Value(None{})}}));
  if (const Value* value = self.as_dict().find(a[0])) return *value;
  return a[1];
}

// items() / keys() / values(): lists (Python's views, as far as templates can tell).
enum class View { kItems, kKeys, kValues };
template <View kView>
Expected<Value> dict_view(Interpreter& interpreter, const Value& self, CallArgs args) {
  PAGODA_TRY(bind_args("items", std::move(args), {}).status());
  const auto& entries = self.as_dict().entries;
  PAGODA_TRY(interpreter.charge(static_cast<int64_t>(entries.size())));
  std::vector<Value> items;
  items.reserve(entries.size());
  for (const auto& [key, value] : entries) {
    if (kView == View::kItems) items.push_back(Value::tuple({key, value}));
    if (kView == View::kKeys) items.push_back(key);
    if (kView == View::kValues) items.push_back(value);
  }
  return Value::dict_view(kView == View::kItems  ? "dict_items"
                          : kView == View::kKeys ? "dict_keys"
                                                 : "dict_values",
                          std::move(items));
}

Expected<Value> dict_copy(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_TRY(bind_args("copy", std::move(args), {}).status());
  return self;  // dicts are immutable here: a copy is indistinguishable
}

Expected<Value> list_count(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("count", std::move(args), {{"value", std::nullopt}}));
  int64_t n = 0;
  for (const Value& item : self.items()) n += equals(item, a[0]) ? 1 : 0;
  return Value(n);
}

Expected<Value> list_index(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_ASSIGN_OR_RETURN(auto a, bind_args("index", std::move(args), {{"value", std::nullopt}}));
  const auto& items = self.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (equals(items[i], a[0])) return Value(static_cast<int64_t>(i));
  }
  return invalid_argument(repr(a[0]) + " is not in " + std::string(type_name(self)));
}

Expected<Value> list_copy(Interpreter&, const Value& self, CallArgs args) {
  PAGODA_TRY(bind_args("copy", std::move(args), {}).status());
  return self;
}

}  // namespace

MethodFn find_dict_method(std::string_view name) {
  if (name == "get") return dict_get;
  if (name == "items") return dict_view<View::kItems>;
  if (name == "keys") return dict_view<View::kKeys>;
  if (name == "values") return dict_view<View::kValues>;
  if (name == "copy") return dict_copy;
  return nullptr;
}

MethodFn find_list_method(std::string_view name) {
  if (name == "count") return list_count;
  if (name == "index") return list_index;
  if (name == "copy") return list_copy;
  return nullptr;
}

}  // namespace pagoda::jinja
