#pragma once
// GGUF metadata values: every scalar type, strings, and arrays (nested too).

#include <cstdint>
#include <string>
#include <string_view>
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

std::string_view value_type_name(ValueType type);  // "uint32", "string", "array", ...

struct Value;

struct Array {
  ValueType element_type = ValueType::UINT8;
  std::vector<Value> items;
};

struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;
  Storage storage;

  ValueType type() const { return static_cast<ValueType>(storage.index()); }
  template <typename T>
  bool holds() const { return std::holds_alternative<T>(storage); }
  template <typename T>
  const T& as() const { return std::get<T>(storage); }
};

// The ValueType that stores a C++ type T (uint32_t -> UINT32, std::string -> STRING, ...).
template <typename T>
constexpr ValueType value_type_of() {
  return static_cast<ValueType>(
      Value::Storage(T{}).index());  // the variant's order is the file's numbering
}

// A short, human-readable rendering (arrays abbreviated after `max_items`).
std::string to_display_string(const Value& value, size_t max_items = 8);

}  // namespace pagoda::gguf
