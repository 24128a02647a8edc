#include "loadgen/request_runner.h"

#include <optional>
#include <vector>

#include "loadgen/sse_parser.h"

namespace pagoda::loadgen {
namespace {

namespace http = beast::http;

constexpr size_t kMaxErrorBodyBytes = 64 * 1024;
constexpr size_t kMaxWholeBodyBytes = 64u << 20;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Follows one response as its bytes arrive: the status, then either server-sent
// events (timed one by one) or a whole body (an error, or a server that ignored
// "stream").
class ResponseObserver {
 public:
  ResponseObserver(ApiKind kind, Clock::time_point sent) : kind_(kind), sent_(sent) {}

  void on_head(int status, std::string_view content_type) {
    status_ = status;
    event_stream_ = status == 200 && content_type.starts_with("text/event-stream");
  }

  Status on_body(std::string_view bytes) {
    const Clock::time_point now = Clock::now();
    if (!event_stream_) {
      const size_t limit = status_ == 200 ? kMaxWholeBodyBytes : kMaxErrorBodyBytes;
      body_.append(bytes.substr(0, limit - std::min(limit, body_.size())));
      return Status::ok_status();
    }
    events_.clear();
    PAGODA_TRY(parser_.feed(bytes, events_));
    for (const SseEvent& event : events_) PAGODA_TRY(on_event(event, now));
    return Status::ok_status();
  }

  // Fills `record` once the exchange is over; `transport` is what the client returned.
  void finish(const Status& transport, const BenchPrompt& prompt, RequestRecord& record) {
    const Clock::time_point end = Clock::now();
    record.http_status = status_;
    if (!transport.ok()) return fail(record, transport.message());
    if (status_ != 200)
      return fail(record, "HTTP " + std::to_string(status_) + ": " + error_message_of_body(body_));
    if (!event_stream_) take_whole_body(end);
    if (!first_text_) return fail(record, "the response carried no generated text");
    record.ttft_s = seconds_between(sent_, *first_text_);
    record.e2e_s = seconds_between(sent_, done_at_.value_or(end));
    record.itl_s = std::move(itl_);
    record.text_chunks = text_chunks_;
    record.prompt_tokens_from_usage = record.output_tokens_from_usage = usage_.has_value();
    record.prompt_tokens = usage_ ? usage_->prompt_tokens : prompt.prompt_tokens;
    record.output_tokens = usage_ ? usage_->completion_tokens : text_chunks_;
    record.success = true;
  }

 private:
  Status on_event(const SseEvent& event, Clock::time_point now) {
    if (event.type == "error") return io_error("the server sent an error event: " + event.data);
    const StreamChunk chunk = parse_stream_event(kind_, event.data);
    if (chunk.error) return io_error("the server sent an error in the stream: " + *chunk.error);
    if (chunk.done) done_at_ = now;
    if (chunk.usage) usage_ = chunk.usage;
    if (chunk.text_bytes > 0) {
      if (last_text_)
        itl_.push_back(seconds_between(*last_text_, now));
      else
        first_text_ = now;
      last_text_ = now;
      ++text_chunks_;
    }
    return Status::ok_status();
  }

  // A whole 200 body: its text counts as one chunk that came at the end.
  void take_whole_body(Clock::time_point end) {
    const StreamChunk whole = parse_whole_response(kind_, body_);
    if (whole.error || whole.text_bytes == 0) return;
    first_text_ = last_text_ = done_at_ = end;
    text_chunks_ = 1;
    usage_ = whole.usage;
  }

  static void fail(RequestRecord& record, std::string error) {
    record.success = false;
    record.error = std::move(error);
  }

  ApiKind kind_;
  Clock::time_point sent_;
  int status_ = 0;
  bool event_stream_ = false;
  std::string body_;  // a body that is not an event stream
  SseParser parser_;
  std::vector<SseEvent> events_;  // scratch: the events of one read
  std::optional<Clock::time_point> first_text_, last_text_, done_at_;
  std::vector<double> itl_;
  int32_t text_chunks_ = 0;
  std::optional<TokenUsage> usage_;
};

}  // namespace

asio::awaitable<RequestRecord> run_request(HttpClient& client, const RequestTarget& target,
                                           const BenchPrompt& prompt, Clock::time_point run_start) {
  HttpRequestSpec request;
  request.method = http::verb::post;
  request.target = client.url().target(target.endpoint);
  request.body = stream_request_body(target.kind, target.model, prompt);
  request.accept = "text/event-stream";

  RequestRecord record;
  const Clock::time_point sent = Clock::now();
  record.send_time_s = seconds_between(run_start, sent);
  ResponseObserver observer(target.kind, sent);
  ResponseCallbacks callbacks;
  callbacks.on_head = [&](int status, std::string_view type) { observer.on_head(status, type); };
  callbacks.on_body = [&](std::string_view bytes) { return observer.on_body(bytes); };
  const Status transport = co_await client.stream(request, sent + target.timeout, callbacks);
  observer.finish(transport, prompt, record);
  co_return record;
}

}  // namespace pagoda::loadgen
