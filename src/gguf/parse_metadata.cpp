// Parser: the metadata key/value pairs and general.alignment.
#include <bit>
#include <string>
#include <utility>

#include "gguf/parser.h"
#include "gguf/value.h"

namespace pagoda::gguf {
namespace {

// Smallest possible encodings, to bound claimed counts by the bytes that remain.
constexpr uint64_t kMinKeyValueBytes = 8 + 1 + 4 + 1;  // key length, 1-byte key, type, 1-byte value
constexpr uint64_t kMinStringBytes = 8;                // the length of an empty string
constexpr uint64_t kMinArrayBytes = 4 + 8;             // element type and length of an empty array

constexpr std::string_view kAlignmentKey = "general.alignment";

uint64_t min_encoded_size(ValueType type) {
  switch (type) {
    case ValueType::STRING:
      return kMinStringBytes;
    case ValueType::ARRAY:
      return kMinArrayBytes;
    default:
      return value_type_size(type);
  }
}

// Reads one scalar of C++ type T into `out`.
template <typename T>
bool read_scalar(Cursor& cursor, Value& out) {
  T scalar{};
  if (!cursor.read(scalar)) return false;
  out.storage = scalar;
  return true;
}

bool read_scalar_of_type(Cursor& cursor, ValueType type, Value& out) {
  switch (type) {
    case ValueType::UINT8:
      return read_scalar<uint8_t>(cursor, out);
    case ValueType::INT8:
      return read_scalar<int8_t>(cursor, out);
    case ValueType::UINT16:
      return read_scalar<uint16_t>(cursor, out);
    case ValueType::INT16:
      return read_scalar<int16_t>(cursor, out);
    case ValueType::UINT32:
      return read_scalar<uint32_t>(cursor, out);
    case ValueType::INT32:
      return read_scalar<int32_t>(cursor, out);
    case ValueType::FLOAT32:
      return read_scalar<float>(cursor, out);
    case ValueType::UINT64:
      return read_scalar<uint64_t>(cursor, out);
    case ValueType::INT64:
      return read_scalar<int64_t>(cursor, out);
    case ValueType::FLOAT64:
      return read_scalar<double>(cursor, out);
    case ValueType::BOOL: {
      uint8_t byte = 0;
      if (!cursor.read(byte)) return false;
      out.storage = byte != 0;  // as ggml reads it: any non-zero byte is true
      return true;
    }
    case ValueType::STRING:
    case ValueType::ARRAY:
      break;
  }
  return false;
}

std::string key_label(std::string_view key) {
  return "key " + quoted(key);
}

}  // namespace

Status Parser::parse_metadata() {
  if (n_metadata_ > cursor_.remaining() / kMinKeyValueBytes) {
    return error("header claims " + std::to_string(n_metadata_) +
                 " metadata entries, more than the " + std::to_string(cursor_.remaining()) +
                 " remaining bytes can hold");
  }
  reader_.metadata_.reserve(n_metadata_);
  for (uint64_t i = 0; i < n_metadata_; ++i) PAGODA_TRY(parse_key_value(i));
  return Status::ok_status();
}

Status Parser::parse_key_value(uint64_t index) {
  std::string_view key;
  if (!cursor_.read_string(key)) return cut_short("key #" + std::to_string(index));
  if (key.empty()) return error("key #" + std::to_string(index) + " is empty");
  if (reader_.metadata_index_.contains(key)) return error("duplicate " + key_label(key));
  uint32_t type_id = 0;
  if (!cursor_.read(type_id)) return cut_short("the type of " + key_label(key));
  const std::optional<ValueType> type = value_type_from_id(type_id);
  if (!type) return error(key_label(key) + " has invalid value type " + std::to_string(type_id));
  PAGODA_ASSIGN_OR_RETURN(Value value, parse_value(*type, key, 0));
  reader_.metadata_index_.emplace(std::string(key), reader_.metadata_.size());
  reader_.metadata_.emplace_back(std::string(key), std::move(value));
  return Status::ok_status();
}

// `depth` counts the arrays this value sits in (0 for a key's own value).
Expected<Value> Parser::parse_value(ValueType type, std::string_view key, int depth) {
  if (type == ValueType::ARRAY) return parse_array(key, depth + 1);
  Value value;
  if (type == ValueType::STRING) {
    std::string_view text;
    if (cursor_.read_string(text)) {
      value.storage = std::string(text);
      return value;
    }
  } else if (read_scalar_of_type(cursor_, type, value)) {
    return value;
  }
  return cut_short((depth == 0 ? "the value of " : "an item of ") + key_label(key));
}

// `depth` is this array's nesting level: 1 for a key's own array.
Expected<Value> Parser::parse_array(std::string_view key, int depth) {
  if (depth > kMaxArrayDepth) {
    return error(key_label(key) + " nests arrays deeper than " + std::to_string(kMaxArrayDepth) +
                 " levels");
  }
  uint32_t element_id = 0;
  if (!cursor_.read(element_id)) return cut_short("the array type of " + key_label(key));
  const std::optional<ValueType> element_type = value_type_from_id(element_id);
  if (!element_type) {
    return error(key_label(key) + " has invalid array element type " + std::to_string(element_id));
  }
  uint64_t length = 0;
  if (!cursor_.read(length)) return cut_short("the array length of " + key_label(key));
  PAGODA_TRY(check_array_length(key, *element_type, length));
  n_array_items_ += length;
  Array array{*element_type, {}};
  array.items.reserve(length);  // justified: each item takes at least one remaining byte
  for (uint64_t i = 0; i < length; ++i) {
    PAGODA_ASSIGN_OR_RETURN(Value item, parse_value(*element_type, key, depth));
    array.items.push_back(std::move(item));
  }
  return Value{std::move(array)};
}

// Before anything is reserved for them: `length` items must fit in the bytes that remain
// and within the file's budget of array items.
Status Parser::check_array_length(std::string_view key, ValueType element_type,
                                  uint64_t length) const {
  const auto too_long = [&](const std::string& limit) {
    return error(key_label(key) + " claims an array of " + std::to_string(length) + " " +
                 std::string(value_type_name(element_type)) + ", more than the " + limit);
  };
  if (length > cursor_.remaining() / min_encoded_size(element_type)) {
    return too_long(std::to_string(cursor_.remaining()) + " remaining bytes can hold");
  }
  if (length > kMaxMetadataArrayItems - n_array_items_) {
    return too_long(std::to_string(kMaxMetadataArrayItems) +
                    " array items a file's metadata may hold");
  }
  return Status::ok_status();
}

Status Parser::resolve_alignment() {
  const Value* value = reader_.find(kAlignmentKey);
  if (value == nullptr) return Status::ok_status();  // kDefaultAlignment
  if (!value->holds<uint32_t>()) {
    return error(key_label(kAlignmentKey) + " has type " + describe_type(*value) +
                 ", expected uint32");
  }
  const uint32_t alignment = value->as<uint32_t>();
  if (!std::has_single_bit(alignment)) {
    return error(std::string(kAlignmentKey) + " " + std::to_string(alignment) +
                 " is not a power of two");
  }
  reader_.alignment_ = alignment;
  return Status::ok_status();
}

}  // namespace pagoda::gguf
