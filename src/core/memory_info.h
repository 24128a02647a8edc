#pragma once
// The memory the kernel reports available (MemAvailable in /proc/meminfo): what the KV
// cache budget is a share of, and what bounds the weights the CPU backend copies.

#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace pagoda {

// The bytes after "MemAvailable:" in the text of /proc/meminfo (given in kB there).
Expected<uint64_t> parse_mem_available(std::string_view meminfo);
// MemAvailable of this machine, from /proc/meminfo.
Expected<uint64_t> available_memory_bytes();

}  // namespace pagoda
