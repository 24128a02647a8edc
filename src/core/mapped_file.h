#pragma once
// A read-only memory map of a whole file. Move-only; unmaps on destruction.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"

namespace pagoda {

class MappedFile {
 public:
  MappedFile() = default;
  static Expected<MappedFile> open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace pagoda
