// MemAvailable from /proc/meminfo: what the KV cache budget is a share of and what bounds
// the weights the CPU backend copies.

#include "core/memory_info.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

constexpr const char* kMeminfo =
    "MemTotal:       24684092 kB\n"
    "MemFree:        23108424 kB\n"
    "MemAvailable:   24254540 kB\n"
    "Buffers:            9240 kB\n";

TEST(MemoryInfo, ParsesMemAvailableInBytes) {
  Expected<uint64_t> bytes = parse_mem_available(kMeminfo);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(*bytes, 24254540ull * 1024);
  EXPECT_EQ(parse_mem_available("MemTotal: 5 kB\n").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(parse_mem_available("MemAvailable: lots\n").status().code(), ErrorCode::kCorruptFile);
  EXPECT_EQ(parse_mem_available("MemAvailable: 12 MB\n").status().code(), ErrorCode::kCorruptFile);
  EXPECT_EQ(parse_mem_available("MemAvailable: 99999999999999999999 kB\n").status().code(),
            ErrorCode::kCorruptFile);
}

TEST(MemoryInfo, ThisMachineReportsAvailableMemory) {
  Expected<uint64_t> bytes = available_memory_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_GT(*bytes, 0u);
}

}  // namespace
}  // namespace pagoda
