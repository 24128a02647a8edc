#include "core/memory_info.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "core/text_file.h"

namespace pagoda {
namespace {

constexpr std::string_view kMemAvailable = "MemAvailable:";

}  // namespace

Expected<uint64_t> parse_mem_available(std::string_view meminfo) {
  const size_t key = meminfo.find(kMemAvailable);
  if (key == std::string_view::npos) return not_found("meminfo: no MemAvailable line");
  std::string_view rest = meminfo.substr(key + kMemAvailable.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  uint64_t kib = 0;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
  if (error != std::errc() || end == rest.data()) {
    return corrupt_file("meminfo: MemAvailable is not a number");
  }
  rest.remove_prefix(static_cast<size_t>(end - rest.data()));
  if (!rest.starts_with(" kB")) return corrupt_file("meminfo: MemAvailable is not in kB");
  if (kib > UINT64_MAX / 1024) return corrupt_file("meminfo: MemAvailable overflows");
  return kib * 1024;
}

Expected<uint64_t> available_memory_bytes() {
  PAGODA_ASSIGN_OR_RETURN(const std::string text, read_text_file("/proc/meminfo"));
  return parse_mem_available(text);
}

}  // namespace pagoda
