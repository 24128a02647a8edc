#pragma once
// GGUF v2/v3 reader over an mmap. Everything the header claims is validated before it
// is trusted: counts, string lengths, tensor shapes, offsets and sizes are checked
// against the file's real size, so a truncated or lying file gives a one-line error
// (naming the file and the problem) and never a crash or a huge allocation.
//
// What is accepted, as ggml accepts it: a dimension of 0 (an empty tensor), any non-zero
// bool byte as true, no padding after the last tensor, no data section at all when there
// are no tensors. Beyond ggml, tensors may lie in any order, as long as each offset is
// aligned and no two tensors share a byte; and metadata arrays may nest (up to
// kMaxArrayDepth), as the GGUF specification allows.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "gguf/value.h"

namespace pagoda::gguf {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian uint32
constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;  // arrays of arrays nest at most this deep
// Array items in all of a file's metadata. Each takes a Value (40 bytes) however small
// its encoding, so this bounds the memory a file can make the reader take (~640 MiB);
// real vocabularies hold well under a million.
constexpr uint64_t kMaxMetadataArrayItems = uint64_t{1} << 24;

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] first: ne[0] is the contiguous (row) dimension
  DType type = DType::F32;
  uint64_t offset = 0;            // bytes from the start of the data section
  uint64_t n_bytes = 0;           // bytes of data
  const uint8_t* data = nullptr;  // points into the mapping (or the parsed buffer)

  int64_t n_elements() const;
  int64_t rows() const;  // product of shape[1..]
  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(n_bytes)}; }
};

class Reader {
 public:
  // Maps and parses a file. Copies of the Reader share the mapping, which lives as long
  // as the last of them, so tensor data pointers stay valid that long.
  static Expected<Reader> open(const std::string& path);
  // Parses bytes owned by the caller, which must outlive the Reader. `name` is used in
  // error messages in place of a path.
  static Expected<Reader> parse(std::span<const uint8_t> bytes, std::string name);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute file offset of tensor data
  const std::string& name() const { return name_; }      // path or given name
  std::span<const uint8_t> bytes() const { return bytes_; }

  // Metadata, in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed access. Errors name the key and, on a type mismatch, the type found:
  // "model.gguf: key 'llama.block_count' has type float32, expected uint32".
  template <typename T>
  Expected<T> get(std::string_view key) const;
  // The value, or `fallback` when the key is missing or holds another type.
  template <typename T>
  T get_or(std::string_view key, T fallback) const;
  // Any integer type, range-checked into int64 (files disagree on u32 vs i32 for counts).
  Expected<int64_t> get_int(std::string_view key) const;
  // Arrays of one scalar/string element type ("... has type array of float32, expected
  // array of int32" when the element type differs).
  template <typename T>
  Expected<std::vector<T>> get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  // "<name>: <problem>" errors for the typed accessors.
  Status key_not_found(std::string_view key) const;
  Status wrong_type(std::string_view key, const Value& found, std::string_view expected) const;

  std::shared_ptr<MappedFile> mapping_;  // null when parsing caller-owned bytes
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;

  friend class Parser;
};

}  // namespace pagoda::gguf

#include "gguf/reader_inl.h"
