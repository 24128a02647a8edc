#pragma once
// Internal to gguf/: fills a Reader from its bytes, validating as it goes. Every
// count, length, shape and offset in the file is checked against the bytes that are
// really there before it is used, so nothing is allocated from an untrusted number.
//
// File layout (all little-endian):
//   "GGUF" | uint32 version | uint64 tensor count | uint64 metadata count
//   metadata:     { string key | uint32 value type | value } x count
//   tensor infos: { string name | uint32 n_dims | int64 ne[n_dims] | uint32 type |
//                   uint64 offset (from the data section) } x count
//   padding to the alignment, then the data section.
// A string is a uint64 byte length then the bytes; an array is a uint32 element type,
// a uint64 length, then the items.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "gguf/cursor.h"
#include "gguf/reader.h"

namespace pagoda::gguf {

class Parser {
 public:
  // Parses reader.bytes_ into the rest of `reader`; errors name reader.name_.
  static Status parse(Reader& reader);

 private:
  explicit Parser(Reader& reader) : reader_(reader), cursor_(reader.bytes_) {}

  // "<file>: <problem>" and "<file>: cut short: <what> at offset O needs N bytes, ...".
  Status error(std::string_view problem) const;
  Status unsupported_error(std::string_view problem) const;
  Status cut_short(std::string_view what) const;

  // parse_metadata.cpp
  Status parse_header();
  Status parse_metadata();
  Status parse_key_value(uint64_t index);
  Expected<Value> parse_value(ValueType type, std::string_view key, int depth);
  Expected<Value> parse_array(std::string_view key, int depth);
  Status check_array_length(std::string_view key, ValueType element_type, uint64_t length) const;
  Status resolve_alignment();

  // parse_tensors.cpp
  Status parse_tensor_infos();
  Status parse_tensor_info(uint64_t index);
  Status parse_shape(TensorInfo& tensor);
  Status parse_type(TensorInfo& tensor);
  Status place_tensor_data();
  Status check_no_overlap() const;

  Reader& reader_;
  Cursor cursor_;
  uint64_t n_tensors_ = 0;      // as the header claims, checked before use
  uint64_t n_metadata_ = 0;     // as the header claims, checked before use
  uint64_t n_array_items_ = 0;  // in all the metadata arrays so far
};

}  // namespace pagoda::gguf
