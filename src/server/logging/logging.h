#pragma once
// The server's logs, through spdlog: the default logger (what spdlog::info() and the
// engine write to) and an access logger with one line per answered request
// (logging_access.h), both to stderr by default, as text or as JSON lines.
//
//   text: [2025-01-31 12:00:00.123] [info] model loaded in 0.42 s
//         [2025-01-31 12:00:01.456] [access] 3f9c2a1e7b4d POST /v1/completions 200 ...
//   json: {"ts":"2025-01-31T12:00:00.123Z","level":"info","logger":"pagoda","msg":"model loaded in 0.42 s"}
//         {"ts":"2025-01-31T12:00:01.456Z","level":"info","logger":"access","msg":"request",
//          "request_id":"3f9c2a1e7b4d","method":"POST",...}
//
// JSON timestamps are UTC, text ones local time.

#include <spdlog/common.h>
#include <spdlog/formatter.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/sink.h>

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "server/logging/logging_access.h"

namespace pagoda::server {

struct LoggingOptions {
  LogFormat format = LogFormat::kText;
  spdlog::level::level_enum level = spdlog::level::info;
  bool log_prompts = false;  // include prompts in access lines (private by default)
};

// "text" or "json".
Expected<LogFormat> parse_log_format(std::string_view name);
std::string_view log_format_name(LogFormat format);
// "trace", "debug", "info", "warn" (or "warning"), "error", "critical", "off".
Expected<spdlog::level::level_enum> parse_log_level(std::string_view name);

// Points the default logger (named "pagoda") and the access logger (named "access") at
// `sink` (nullptr: stderr), whose formatter it sets, with the format and level of
// `options`. Call at start-up, before other threads log (spdlog's default logger must
// not be replaced while another thread writes to it).
void configure_logging(const LoggingOptions& options, spdlog::sink_ptr sink = nullptr);

// Writes one access line for `record` at info level, in the configured format, with the
// prompt only if configured so. Thread-safe.
void log_access(const AccessRecord& record);

// The name of the access logger; its lines are formatted as access lines.
inline constexpr std::string_view kAccessLoggerName = "access";

// A formatter for a sink that both loggers write to, choosing by the message's logger:
// text lines as shown above, or one JSON object per line (ts, level, logger, msg; an
// access line, itself a JSON object, has its members merged after "msg":"request").
std::unique_ptr<spdlog::formatter> make_log_formatter(LogFormat format);

}  // namespace pagoda::server
