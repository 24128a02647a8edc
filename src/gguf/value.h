#pragma once
// GGUF metadata values: every scalar type, strings, and arrays (nested too).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace pagoda::gguf {

// Numbered as in the file format.
enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
constexpr uint32_t kValueTypeCount = 13;

std::string_view value_type_name(ValueType type);  // "uint32", "string", "array", ...
// The ValueType numbered `id` in a file; nullopt for ids the format does not define.
std::optional<ValueType> value_type_from_id(uint32_t id);
// Bytes a scalar of this type takes in a file (bool: 1); 0 for STRING and ARRAY, whose
// size depends on their contents.
size_t value_type_size(ValueType type);

struct Value;

struct Array {
  ValueType element_type = ValueType::UINT8;
  std::vector<Value> items;  // every item holds element_type

  friend bool operator==(const Array& a, const Array& b);
};

struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;
  Storage storage;

  ValueType type() const { return static_cast<ValueType>(storage.index()); }
  template <typename T>
  bool holds() const {
    return std::holds_alternative<T>(storage);
  }
  template <typename T>
  const T& as() const {
    return std::get<T>(storage);
  }

  friend bool operator==(const Value& a, const Value& b) { return a.storage == b.storage; }
};

inline bool operator==(const Array& a, const Array& b) {
  return a.element_type == b.element_type && a.items == b.items;
}

namespace detail {
template <typename T, typename... Alternatives>
constexpr size_t index_in(const std::variant<Alternatives...>*) {
  constexpr bool matches[] = {std::is_same_v<T, Alternatives>...};
  for (size_t i = 0; i < sizeof...(Alternatives); ++i) {
    if (matches[i]) return i;
  }
  return sizeof...(Alternatives);
}
}  // namespace detail

// True when T is one of the C++ types a Value stores.
template <typename T>
constexpr bool is_value_alternative =
    detail::index_in<T>(static_cast<const Value::Storage*>(nullptr)) < kValueTypeCount;

// The ValueType that stores a C++ type T (uint32_t -> UINT32, std::string -> STRING, ...).
template <typename T>
constexpr ValueType value_type_of() {
  static_assert(is_value_alternative<T>, "T is not a GGUF value type");
  // The variant's order is the file's numbering.
  return static_cast<ValueType>(detail::index_in<T>(static_cast<const Value::Storage*>(nullptr)));
}

// An array value of scalars or strings: make_array(std::vector<float>{1, 2}).
template <typename T>
Value make_array(const std::vector<T>& items) {
  static_assert(is_value_alternative<T> && !std::is_same_v<T, Array>,
                "use Array{ValueType::ARRAY, ...} for nested arrays");
  Array array{value_type_of<T>(), {}};
  array.items.reserve(items.size());
  for (const T& item : items) array.items.push_back(Value{T(item)});
  return Value{std::move(array)};
}

// The type as error messages and dumps spell it: "uint32", "array of string",
// "array of array of int32" (a nested array is described by its first item).
std::string describe_type(const Value& value);

// `text` in single quotes, as messages and dumps show names and strings: control bytes
// and invalid UTF-8 escaped (\n, \x01), so the result is one printable line; cut after
// `max_bytes` with "... (N bytes)".
std::string quoted(std::string_view text, size_t max_bytes = 120);

// A short, human-readable rendering: numbers as written, strings quoted with control
// bytes and invalid UTF-8 escaped, long strings cut after `max_string_bytes`, arrays as
// "[array of 512 string] ['<unk>', '<s>', ...]" with at most `max_items` items shown.
std::string to_display_string(const Value& value, size_t max_items = 8,
                              size_t max_string_bytes = 120);

}  // namespace pagoda::gguf
