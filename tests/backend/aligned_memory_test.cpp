#include "backend/cpu/aligned_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace pagoda::backend::cpu {
namespace {

uintptr_t address(const AlignedPtr& p) { return reinterpret_cast<uintptr_t>(p.get()); }

TEST(AlignedMemory, SmallAllocationsAreCacheLineAligned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}, kHugePageMinBytes - 1}) {
    AlignedPtr p = allocate_aligned(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(address(p) % kAlignment, 0u) << bytes;
    std::memset(p.get(), 0xab, bytes);  // every byte asked for is usable
  }
}

TEST(AlignedMemory, LargeAllocationsAreHugePageAlignedAndWholeSized) {
  for (size_t bytes : {kHugePageMinBytes, kHugePageMinBytes + 1, 3 * kHugePageBytes + 4096}) {
    AlignedPtr p = allocate_aligned(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(address(p) % kHugePageBytes, 0u) << bytes;
    // The size was rounded up to whole huge pages: the last one is ours to write.
    const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    std::memset(p.get(), 0xcd, rounded);
    EXPECT_EQ(static_cast<unsigned char>(p.get()[rounded - 1]), 0xcd);
  }
}

TEST(AlignedMemory, ImpossibleSizesFailWithoutThrowing) {
  EXPECT_EQ(allocate_aligned(SIZE_MAX), nullptr);
  EXPECT_EQ(allocate_aligned(SIZE_MAX - kHugePageBytes), nullptr);
}

TEST(Scratch, GrowsAndKeepsItsMemoryForSmallerRequests) {
  Scratch s;
  std::byte* small = s.reserve(100);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(s.reserve(50), small);  // no reallocation for a smaller request
  std::byte* large = s.reserve(kHugePageMinBytes + 10);
  ASSERT_NE(large, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % kHugePageBytes, 0u);
  std::memset(large, 1, kHugePageMinBytes + 10);
  EXPECT_EQ(s.reserve(kHugePageMinBytes), large);
}

}  // namespace
}  // namespace pagoda::backend::cpu
