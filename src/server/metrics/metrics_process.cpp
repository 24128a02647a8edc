#include "server/metrics/metrics_process.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>

namespace pagoda::server {
namespace {

// Skips spaces, then reads one unsigned decimal number.
std::optional<uint64_t> next_number(std::string_view& text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  uint64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc() || result.ptr == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(result.ptr - text.data()));
  return value;
}

}  // namespace

std::optional<ProcessMemory> parse_statm(std::string_view text, uint64_t page_bytes) {
  const std::optional<uint64_t> size_pages = next_number(text);
  const std::optional<uint64_t> resident_pages = next_number(text);
  if (!size_pages || !resident_pages) return std::nullopt;
  return ProcessMemory{.resident_bytes = *resident_pages * page_bytes,
                       .virtual_bytes = *size_pages * page_bytes};
}

std::optional<ProcessMemory> read_process_memory() {
  std::ifstream file("/proc/self/statm");
  if (!file) return std::nullopt;
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const long page = sysconf(_SC_PAGESIZE);
  return parse_statm(text, page > 0 ? static_cast<uint64_t>(page) : 4096);
}

double process_cpu_seconds() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0.0;
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace pagoda::server
