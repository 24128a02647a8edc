#include "loadgen/sse_parser.h"

namespace pagoda::loadgen {
namespace {
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
}  // namespace

Status SseParser::feed(std::string_view bytes, std::vector<SseEvent>& events) {
  if (!error_.ok()) return error_;
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const size_t end = bytes.find_first_of("\r\n");
    const std::string_view piece = bytes.substr(0, end);
    if (line_.size() + piece.size() + data_.size() > max_event_bytes_) {
      error_ = invalid_argument("server-sent event larger than " +
                                std::to_string(max_event_bytes_) + " bytes");
      return error_;
    }
    line_.append(piece);
    if (end == std::string_view::npos) break;
    skip_lf_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    if (at_stream_start_ && line_.starts_with(kByteOrderMark))
      line_.erase(0, kByteOrderMark.size());
    at_stream_start_ = false;
    process_line(line_, events);
    line_.clear();
  }
  if (at_stream_start_ && line_.size() >= kByteOrderMark.size()) {
    if (line_.starts_with(kByteOrderMark)) line_.erase(0, kByteOrderMark.size());
    at_stream_start_ = false;
  }
  return Status::ok_status();
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>& events) {
  if (line.empty()) {
    dispatch(events);
    return;
  }
  if (line.front() == ':') return;  // a comment, such as a keep-alive ping
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
  if (value.starts_with(' ')) value.remove_prefix(1);
  if (field == "data") {
    data_.append(value);
    data_.push_back('\n');
  } else if (field == "event") {
    type_ = std::string(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_ = std::string(value);
  }
  // "retry" and unknown fields are ignored, as the standard says.
}

void SseParser::dispatch(std::vector<SseEvent>& events) {
  if (data_.empty()) {  // no data lines: nothing to dispatch, the type resets
    type_.clear();
    return;
  }
  data_.pop_back();  // the '\n' after the last data line
  SseEvent event;
  if (!type_.empty()) event.type = std::move(type_);
  event.data = std::move(data_);
  event.id = last_id_;
  events.push_back(std::move(event));
  data_.clear();
  type_.clear();
}

}  // namespace pagoda::loadgen
