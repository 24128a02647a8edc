// libFuzzer target: gguf::Reader::parse on arbitrary bytes. A parse either fails with a
// one-line message naming the file, or yields a reader whose every value, typed access
// and tensor byte can be read without leaving the input.
// Seeds in fuzz/seeds/gguf_reader/, written once by gguf::Writer: llama_tiny.gguf (a
// small llama-like model, four tensor types), every_type_v2.gguf (every value type, nested
// arrays, a v2 header, alignment 64, scalar/empty/4-d tensors), vocab_only.gguf (no tensors).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gguf/dump.h"
#include "gguf/reader.h"

namespace {

using pagoda::gguf::Array;
using pagoda::gguf::Reader;
using pagoda::gguf::Value;
using pagoda::gguf::ValueType;

constexpr std::string_view kName = "fuzz.gguf";

// Aborts (so libFuzzer records the input) when an invariant of the reader is broken.
void require(bool condition) {
  if (!condition) __builtin_trap();
}

template <typename T>
void touch_array(const Reader& reader, const std::string& key, size_t expected_size) {
  const auto items = reader.get_array<T>(key);
  require(items.ok() && items->size() == expected_size);
}

void touch_value(const Reader& reader, const std::string& key, const Value& value) {
  require(!to_display_string(value, 4, 16).empty());
  (void)reader.get_int(key);
  (void)reader.get<uint32_t>(key);
  (void)reader.get<std::string>(key);
  (void)reader.get_array<float>(key);
  if (!value.holds<Array>()) return;
  const Array& array = value.as<Array>();
  const size_t n = array.items.size();
  switch (array.element_type) {
    case ValueType::UINT8:
      touch_array<uint8_t>(reader, key, n);
      break;
    case ValueType::INT8:
      touch_array<int8_t>(reader, key, n);
      break;
    case ValueType::UINT16:
      touch_array<uint16_t>(reader, key, n);
      break;
    case ValueType::INT16:
      touch_array<int16_t>(reader, key, n);
      break;
    case ValueType::UINT32:
      touch_array<uint32_t>(reader, key, n);
      break;
    case ValueType::INT32:
      touch_array<int32_t>(reader, key, n);
      break;
    case ValueType::FLOAT32:
      touch_array<float>(reader, key, n);
      break;
    case ValueType::BOOL:
      touch_array<bool>(reader, key, n);
      break;
    case ValueType::STRING:
      touch_array<std::string>(reader, key, n);
      break;
    case ValueType::UINT64:
      touch_array<uint64_t>(reader, key, n);
      break;
    case ValueType::INT64:
      touch_array<int64_t>(reader, key, n);
      break;
    case ValueType::FLOAT64:
      touch_array<double>(reader, key, n);
      break;
    case ValueType::ARRAY:
      for (const Value& item : array.items) require(item.holds<Array>());
      break;
  }
}

void touch_tensors(const Reader& reader, std::span<const uint8_t> input) {
  const uint8_t* begin = input.data();
  const uint8_t* end = input.data() + input.size();
  volatile uint8_t sink = 0;
  for (const pagoda::gguf::TensorInfo& tensor : reader.tensors()) {
    require(reader.find_tensor(tensor.name) == &tensor);
    require(tensor.n_elements() >= 0);
    if (tensor.n_bytes == 0) continue;
    require(tensor.data >= begin && tensor.n_bytes <= static_cast<uint64_t>(end - tensor.data));
    sink = sink + tensor.data[0] + tensor.data[tensor.n_bytes - 1];
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  const pagoda::Expected<Reader> reader = Reader::parse(input, std::string(kName));
  if (!reader.ok()) {
    const std::string& message = reader.status().message();
    require(message.rfind("fuzz.gguf: ", 0) == 0 && message.find('\n') == std::string::npos);
    return 0;
  }
  for (const auto& [key, value] : reader->metadata()) {
    require(reader->find(key) == &value);
    touch_value(*reader, key, value);
  }
  touch_tensors(*reader, input);
  require(!pagoda::gguf::dump(*reader).empty());
  return 0;
}
