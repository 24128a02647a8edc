#pragma once
// What the client saw of one benchmark request. Times are in seconds on the
// client's steady clock, as vLLM's benchmark takes them: TTFT from sending the
// request to the first chunk with text, ITL the gaps between later chunks with text,
// end-to-end from sending to the end of the stream.

#include <cstdint>
#include <string>
#include <vector>

namespace pagoda::loadgen {

struct RequestRecord {
  bool success = false;
  std::string error;          // why it failed ("HTTP 503: ...", "timed out"...)
  int http_status = 0;        // 0: no response came
  double send_time_s = 0.0;   // when it was sent, after the run started
  double ttft_s = 0.0;        // time to first token
  double e2e_s = 0.0;         // end-to-end latency
  std::vector<double> itl_s;  // [text chunks - 1] inter-token latencies
  int32_t text_chunks = 0;    // streamed chunks carrying text
  int32_t prompt_tokens = 0;  // from usage when sent, else the prompt's own count
  int32_t output_tokens = 0;  // from usage when sent, else text_chunks
  bool prompt_tokens_from_usage = false;
  bool output_tokens_from_usage = false;
};

}  // namespace pagoda::loadgen
