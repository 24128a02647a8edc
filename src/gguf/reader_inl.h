#pragma once
// Template members of gguf::Reader (included at the end of reader.h).

#include <string>
#include <type_traits>
#include <vector>

namespace pagoda::gguf {

template <typename T>
Expected<T> Reader::get(std::string_view key) const {
  static_assert(is_value_alternative<T>, "get<T>: T must be a type a GGUF value stores");
  const Value* value = find(key);
  if (value == nullptr) return key_not_found(key);
  if (!value->holds<T>()) return wrong_type(key, *value, value_type_name(value_type_of<T>()));
  return value->as<T>();
}

template <typename T>
T Reader::get_or(std::string_view key, T fallback) const {
  static_assert(is_value_alternative<T>, "get_or<T>: T must be a type a GGUF value stores");
  const Value* value = find(key);
  // A key of another type counts as absent: callers who must tell the two apart use get().
  if (value == nullptr || !value->holds<T>()) return fallback;
  return value->as<T>();
}

template <typename T>
Expected<std::vector<T>> Reader::get_array(std::string_view key) const {
  static_assert(is_value_alternative<T> && !std::is_same_v<T, Array>,
                "get_array<T>: T must be a scalar type or std::string");
  const Value* value = find(key);
  if (value == nullptr) return key_not_found(key);
  const std::string expected = "array of " + std::string(value_type_name(value_type_of<T>()));
  if (!value->holds<Array>() || value->as<Array>().element_type != value_type_of<T>()) {
    return wrong_type(key, *value, expected);
  }
  const Array& array = value->as<Array>();
  std::vector<T> out;
  out.reserve(array.items.size());
  for (const Value& item : array.items) out.push_back(item.as<T>());
  return out;
}

}  // namespace pagoda::gguf
