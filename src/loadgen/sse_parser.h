#pragma once
// Incremental parser for a server-sent event stream (text/event-stream, as the HTML
// standard defines it): lines end in CRLF, LF or CR; "data:" lines accumulate, joined
// by '\n'; "event:" names the event; lines starting with ':' are comments; a blank
// line dispatches. Bytes may arrive split anywhere, even between a CR and its LF.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::loadgen {

struct SseEvent {
  std::string type = "message";  // the "event:" field, "message" when absent
  std::string data;              // the "data:" lines joined by '\n'
  std::string id;                // the last "id:" seen on the stream, "" if none
};

class SseParser {
 public:
  // A line or an event larger than this is an error: a server that streams
  // without ever ending a line must not grow the client without bound.
  static constexpr size_t kDefaultMaxEventBytes = 16u << 20;

  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes)
      : max_event_bytes_(max_event_bytes) {}

  // Parses `bytes` and appends each event completed by them to `events`. After an
  // error the parser stays failed and ignores further bytes.
  Status feed(std::string_view bytes, std::vector<SseEvent>& events);

 private:
  void process_line(std::string_view line, std::vector<SseEvent>& events);
  void dispatch(std::vector<SseEvent>& events);

  size_t max_event_bytes_;
  std::string line_;  // the unterminated line so far
  std::string data_;  // the event's data lines, each followed by '\n'
  std::string type_;  // the event's "event:" field
  std::string last_id_;
  bool skip_lf_ = false;         // the previous byte was a CR ending a line
  bool at_stream_start_ = true;  // a UTF-8 byte order mark here is dropped
  Status error_;
};

}  // namespace pagoda::loadgen
