#include "server/http/sse.h"

#include <cstddef>

namespace pagoda::server {
namespace {

constexpr std::string_view kDataPrefix = "data: ";

// Calls `line(text)` for each line of `payload`, split where an SSE client splits.
template <class LineFn>
void for_each_line(std::string_view payload, LineFn&& line) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < payload.size(); ++i) {
    if (payload[i] != '\r' && payload[i] != '\n') continue;
    line(payload.substr(start, i - start));
    if (payload[i] == '\r' && i + 1 < payload.size() && payload[i + 1] == '\n') ++i;
    start = i + 1;
  }
  line(payload.substr(start));
}

std::size_t sse_event_size(std::string_view payload) {
  std::size_t size = 1;  // the blank line ending the event
  for_each_line(payload, [&](std::string_view text) { size += kDataPrefix.size() + text.size() + 1; });
  return size;
}

void append_sse_event(std::string& out, std::string_view payload) {
  for_each_line(payload, [&](std::string_view text) {
    out += kDataPrefix;
    out += text;
    out += '\n';
  });
  out += '\n';
}

void append_hex(std::string& out, std::size_t value) {
  static constexpr char kHex[] = "0123456789abcdef";
  char digits[2 * sizeof(value)];
  std::size_t n = 0;
  do {
    digits[n++] = kHex[value & 0xf];
    value >>= 4;
  } while (value != 0);
  while (n > 0) out += digits[--n];
}

constexpr std::size_t kChunkFramingBytes = 2 * sizeof(std::size_t) + 4;  // hex size, 2 CRLFs

}  // namespace

std::string sse_event(std::string_view payload) {
  std::string out;
  out.reserve(sse_event_size(payload));
  append_sse_event(out, payload);
  return out;
}

std::string http_chunk(std::string_view data) {
  std::string out;
  out.reserve(data.size() + kChunkFramingBytes);
  append_hex(out, data.size());
  out += "\r\n";
  out += data;
  out += "\r\n";
  return out;
}

std::string sse_event_chunk(std::string_view payload) {
  const std::size_t event_size = sse_event_size(payload);
  std::string out;
  out.reserve(event_size + kChunkFramingBytes);
  append_hex(out, event_size);
  out += "\r\n";
  append_sse_event(out, payload);
  out += "\r\n";
  return out;
}

}  // namespace pagoda::server
