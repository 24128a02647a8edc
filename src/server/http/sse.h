#pragma once
// Server-sent events on the wire (WHATWG HTML, "Server-sent events"): each event is
// one `data:` line per line of its payload and a blank line; on HTTP/1.1 the stream's
// body uses chunked transfer coding (RFC 9112 7.1), one chunk per event so that each
// event reaches the client as soon as it is written.

#include <string>
#include <string_view>

namespace pagoda::server {

// "data: <line>\n" for each line of `payload` (split at \r\n, \r or \n, as the client
// will), then "\n". An empty payload is one empty data line.
std::string sse_event(std::string_view payload);

// One chunk: "<size in hex>\r\n<data>\r\n". `data` must not be empty (an empty chunk
// ends the body: see kLastHttpChunk).
std::string http_chunk(std::string_view data);

// http_chunk(sse_event(payload)), built in one allocation.
std::string sse_event_chunk(std::string_view payload);

// The last chunk, with no trailer fields: ends a chunked body.
inline constexpr std::string_view kLastHttpChunk = "0\r\n\r\n";

}  // namespace pagoda::server
