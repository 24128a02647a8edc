#pragma once
// GGUF v2/v3 reader over an mmap. Everything the header claims is validated before it
// is trusted: counts, string lengths, tensor shapes, offsets and sizes are checked
// against the file's real size, so a truncated or lying file gives a one-line error
// (naming the file and the problem) and never a crash or a huge allocation.

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

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] first: ne[0] is the contiguous (row) dimension
  DType type = DType::F32;
  uint64_t offset = 0;         // bytes from the start of the data section
  uint64_t n_bytes = 0;        // bytes of data
  const uint8_t* data = nullptr;  // points into the mapping (or the parsed buffer)

  int64_t n_elements() const;
  int64_t rows() const;  // product of shape[1..]
};

class Reader {
 public:
  // Maps and parses a file.
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
  template <typename T>
  T get_or(std::string_view key, T fallback) const;
  // Any integer type, range-checked into int64 (files disagree on u32 vs i32 for counts).
  Expected<int64_t> get_int(std::string_view key) const;
  // Arrays of one scalar/string element type.
  template <typename T>
  Expected<std::vector<T>> get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
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
