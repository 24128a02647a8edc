#pragma once
// What the process itself costs, for /metrics and /health: memory from /proc/self/statm
// (one small read) and CPU time from getrusage().

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda::server {

struct ProcessMemory {
  uint64_t resident_bytes = 0;  // RSS
  uint64_t virtual_bytes = 0;   // address space
};

// Parses the text of /proc/self/statm ("size resident shared text lib data dt", in
// pages). Nothing on malformed text.
std::optional<ProcessMemory> parse_statm(std::string_view text, uint64_t page_bytes);
// This process's memory; nothing where /proc cannot be read.
std::optional<ProcessMemory> read_process_memory();
// User plus system CPU seconds this process has used, all threads together.
double process_cpu_seconds();

}  // namespace pagoda::server
