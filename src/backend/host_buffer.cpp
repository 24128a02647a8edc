#include "backend/host_buffer.h"

#include <cstring>
#include <new>

namespace pagoda::backend {

namespace {
constexpr std::align_val_t kAlignment{64};
}  // namespace

HostBuffer::HostBuffer(size_t bytes)
    : bytes_(static_cast<std::byte*>(::operator new(bytes == 0 ? 1 : bytes, kAlignment))), size_(bytes) {
  std::memset(bytes_.get(), 0, bytes);
}

void HostBuffer::Free::operator()(std::byte* p) const { ::operator delete(p, kAlignment); }

Expected<std::unique_ptr<Buffer>> Backend::allocate_host(size_t bytes) {
  try {
    return std::unique_ptr<Buffer>(new HostBuffer(bytes));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  }
}

}  // namespace pagoda::backend
