#pragma once
// Plain host memory as a Buffer: what Backend::allocate_host gives where the device needs
// nothing special of the host memory it copies to and from (the CPU backend's ops read
// it directly).

#include <cstddef>
#include <memory>

#include "backend/backend.h"

namespace pagoda::backend {

class HostBuffer final : public Buffer {
 public:
  // `bytes` of zeroed memory, 64-byte aligned (a cache line, an AVX-512 vector).
  explicit HostBuffer(size_t bytes);
  void* data() override { return bytes_.get(); }
  size_t size() const override { return size_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> bytes_;
  size_t size_;
};

}  // namespace pagoda::backend
