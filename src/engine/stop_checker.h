#pragma once
// Decides when a sequence is finished and which of its text may be shown yet:
//  - an end-of-generation token (EOS, EOT, any token the vocabulary marks EOG) stops it,
//    and its own text is never shown;
//  - a stop string stops it even when it spans several tokens: text is held back while
//    it could still be the start of a stop string, and the output ends right before the
//    stop string;
//  - max_tokens generated tokens end it with reason "length".

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pagoda::engine {

enum class FinishReason {
  kNone,    // still running
  kStop,    // an end-of-generation token or a stop string
  kLength,  // max_tokens reached (or the context is full)
  kAbort,   // ended from outside: the client left, the server shuts down, an error
};

// "stop", "length", "abort" (OpenAI's spelling for the first two); "" for kNone.
std::string_view finish_reason_name(FinishReason reason);

struct StopConditions {
  int32_t max_tokens = 256;               // generated tokens at most; > 0
  std::vector<std::string> stop_strings;  // non-empty strings
  bool ignore_eog = false;                // keep going through end-of-generation tokens
};

struct StopUpdate {
  std::string_view text;  // newly releasable text; valid until the next call
  FinishReason finish = FinishReason::kNone;
};

class StopChecker {
 public:
  using IsEog = std::function<bool(int32_t token)>;

  // Fails on max_tokens <= 0 or an empty stop string.
  static Expected<StopChecker> create(StopConditions conditions, IsEog is_eog);

  // Feeds one generated token and the text it added (from the streaming detokenizer).
  // Once finished, further calls release nothing.
  StopUpdate push(int32_t token, std::string_view text);

  // Releases whatever is still held back, for a sequence ended from outside (a full
  // context, an abort). Finished sequences have nothing held.
  std::string_view flush();

  FinishReason finish() const { return finish_; }
  int32_t n_generated() const { return n_generated_; }
  int32_t max_tokens() const { return conditions_.max_tokens; }

 private:
  StopChecker(StopConditions conditions, IsEog is_eog);
  // Length of the longest tail of pending_ that is a proper prefix of a stop string.
  size_t held_back_length() const;
  StopUpdate release(size_t n_bytes, FinishReason finish);

  StopConditions conditions_;
  IsEog is_eog_;
  std::string pending_;   // text received but not yet released
  std::string released_;  // what the last call released (reused buffer)
  int32_t n_generated_ = 0;
  FinishReason finish_ = FinishReason::kNone;
};

}  // namespace pagoda::engine
