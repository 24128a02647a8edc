#include "engine/stop_checker.h"

#include <algorithm>
#include <utility>

namespace pagoda::engine {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
  }
  return "";
}

Expected<StopChecker> StopChecker::create(StopConditions conditions, IsEog is_eog) {
  if (conditions.max_tokens <= 0) {
    return invalid_argument("max_tokens must be positive, got " +
                            std::to_string(conditions.max_tokens));
  }
  for (const std::string& stop : conditions.stop_strings) {
    if (stop.empty()) return invalid_argument("stop strings must not be empty");
  }
  return StopChecker(std::move(conditions), std::move(is_eog));
}

StopChecker::StopChecker(StopConditions conditions, IsEog is_eog)
    : conditions_(std::move(conditions)), is_eog_(std::move(is_eog)) {
  size_t longest = 0;
  for (const std::string& stop : conditions_.stop_strings) longest = std::max(longest, stop.size());
  pending_.reserve(2 * longest + 64);
  released_.reserve(2 * longest + 64);
}

StopUpdate StopChecker::push(int32_t token, std::string_view text) {
  if (finish_ != FinishReason::kNone) return {};
  ++n_generated_;
  if (!conditions_.ignore_eog && is_eog_ && is_eog_(token)) {
    return release(pending_.size(), FinishReason::kStop);
  }
  pending_.append(text);
  // The earliest stop string wins; only text since the last release can hold one,
  // since everything released before could not start a match.
  size_t stop_at = std::string::npos;
  for (const std::string& stop : conditions_.stop_strings) {
    stop_at = std::min(stop_at, pending_.find(stop));
  }
  if (stop_at != std::string::npos) return release(stop_at, FinishReason::kStop);
  if (n_generated_ >= conditions_.max_tokens) {
    return release(pending_.size(), FinishReason::kLength);
  }
  return release(pending_.size() - held_back_length(), FinishReason::kNone);
}

std::string_view StopChecker::flush() {
  released_.assign(pending_);
  pending_.clear();
  return released_;
}

size_t StopChecker::held_back_length() const {
  const std::string_view pending = pending_;
  size_t held = 0;
  for (std::string_view stop : conditions_.stop_strings) {
    const size_t longest = std::min(stop.size() - 1, pending.size());
    for (size_t n = longest; n > held; --n) {
      if (pending.substr(pending.size() - n) == stop.substr(0, n)) {
        held = n;
        break;
      }
    }
  }
  return held;
}

StopUpdate StopChecker::release(size_t n_bytes, FinishReason finish) {
  released_.assign(pending_, 0, n_bytes);
  if (finish == FinishReason::kNone) {
    pending_.erase(0, n_bytes);
  } else {
    pending_.clear();  // what follows a stop string is dropped
    finish_ = finish;
  }
  return {released_, finish};
}

}  // namespace pagoda::engine
