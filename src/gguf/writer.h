#pragma once
// Builds GGUF files: metadata in the order it was set, tensors laid out one after the
// other at offsets rounded up to the alignment (general.alignment when it is a uint32
// power of two, otherwise 32). Used by tests, to build good and broken files in memory,
// and by tools that write models.
//
//   gguf::Writer writer;
//   PAGODA_TRY(writer.set_string("general.architecture", "llama"));
//   PAGODA_TRY(writer.add_tensor("token_embd.weight", DType::F32, {64, 512}, bytes));
//   PAGODA_TRY(writer.write_file("model.gguf"));

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "gguf/value.h"

namespace pagoda::gguf {

class Writer {
 public:
  // The header's version: 3 unless set (the encoding is the same for 2 and 3).
  void set_version(uint32_t version) { version_ = version; }

  // Sets a key, replacing its value in place if it is already set. Fails on an empty
  // key, an array whose items do not all hold its element type, or arrays nested deeper
  // than the reader accepts.
  Status set(std::string key, Value value);
  Status set_u32(std::string key, uint32_t value) { return set(std::move(key), Value{value}); }
  Status set_i32(std::string key, int32_t value) { return set(std::move(key), Value{value}); }
  Status set_u64(std::string key, uint64_t value) { return set(std::move(key), Value{value}); }
  Status set_f32(std::string key, float value) { return set(std::move(key), Value{value}); }
  Status set_bool(std::string key, bool value) { return set(std::move(key), Value{value}); }
  Status set_string(std::string key, std::string value) {
    return set(std::move(key), Value{std::move(value)});
  }
  Status set_string_array(std::string key, const std::vector<std::string>& items) {
    return set(std::move(key), make_array(items));
  }
  template <typename T>
  Status set_array(std::string key, const std::vector<T>& items) {
    return set(std::move(key), make_array(items));
  }

  // Adds a tensor; `data` (copied) must be exactly the bytes its type and shape take.
  // `shape` lists ne[0] (the contiguous dimension) first.
  Status add_tensor(std::string name, DType type, std::vector<int64_t> shape,
                    std::span<const uint8_t> data);

  // The alignment the tensors will be laid out with.
  uint64_t alignment() const;

  std::vector<uint8_t> serialize() const;
  // Writes the file through a temporary beside it, renamed into place once complete.
  Status write_file(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType type = DType::F32;
    std::vector<int64_t> shape;  // ne[0] first
    std::vector<uint8_t> data;
  };

  uint32_t version_ = 3;
  std::vector<std::pair<std::string, Value>> metadata_;  // in the order set
  std::vector<Tensor> tensors_;                          // in the order added
};

}  // namespace pagoda::gguf
