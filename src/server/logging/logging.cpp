#include "server/logging/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <mutex>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

constexpr const char* kTextPattern = "[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v";
constexpr const char* kAccessTextPattern = "[%Y-%m-%d %H:%M:%S.%e] [access] %v";

// The access logger and how to write its lines, swapped whole by configure_logging().
struct AccessLog {
  std::shared_ptr<spdlog::logger> logger;
  LogFormat format = LogFormat::kText;
  bool log_prompts = false;
};

std::mutex access_mutex;
AccessLog access_log;  // guarded by access_mutex

void append(spdlog::memory_buf_t& dest, std::string_view s) { dest.append(s.data(), s.data() + s.size()); }

// "2025-01-31T12:00:00.123Z"
std::string utc_timestamp(spdlog::log_clock::time_point time) {
  using namespace std::chrono;
  const auto since_epoch = time.time_since_epoch();
  const time_t seconds = static_cast<time_t>(duration_cast<std::chrono::seconds>(since_epoch).count());
  const auto millis = duration_cast<milliseconds>(since_epoch).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];  // room for any int the fields could hold
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis < 0 ? millis + 1000 : millis));
  return buffer;
}

std::string json_string(std::string_view s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string_view view(spdlog::string_view_t s) { return {s.data(), s.size()}; }

// {"ts":..,"level":..,"logger":..,"msg":..[, access fields]}
class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string_view payload = view(msg.payload);
    append(dest, "{\"ts\":\"");
    append(dest, utc_timestamp(msg.time));
    append(dest, "\",\"level\":\"");
    append(dest, view(spdlog::level::to_string_view(msg.level)));
    append(dest, "\",\"logger\":");
    append(dest, json_string(view(msg.logger_name)));
    append(dest, ",\"msg\":");
    // An access line is a JSON object (format_access_line): its members join this one.
    const bool fields = view(msg.logger_name) == kAccessLoggerName && payload.size() >= 2 &&
                        payload.front() == '{' && payload.back() == '}';
    if (fields) {
      append(dest, "\"request\"");
      if (payload.size() > 2) {
        append(dest, ",");
        append(dest, payload.substr(1, payload.size() - 2));
      }
    } else {
      append(dest, json_string(payload));
    }
    append(dest, "}\n");
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

// spdlog patterns, one for the access logger and one for everything else.
class TextLogFormatter final : public spdlog::formatter {
 public:
  TextLogFormatter()
      : main_(std::make_unique<spdlog::pattern_formatter>(kTextPattern)),
        access_(std::make_unique<spdlog::pattern_formatter>(kAccessTextPattern)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    (view(msg.logger_name) == kAccessLoggerName ? access_ : main_)->format(msg, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextLogFormatter>();
  }

 private:
  std::unique_ptr<spdlog::formatter> main_;
  std::unique_ptr<spdlog::formatter> access_;
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_log_formatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonLogFormatter>();
  return std::make_unique<TextLogFormatter>();
}

Expected<LogFormat> parse_log_format(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return invalid_argument("unknown log format '" + std::string(name) + "' (use text or json)");
}

std::string_view log_format_name(LogFormat format) { return format == LogFormat::kJson ? "json" : "text"; }

Expected<spdlog::level::level_enum> parse_log_level(std::string_view name) {
  using spdlog::level::level_enum;
  static constexpr std::pair<std::string_view, level_enum> kLevels[] = {
      {"trace", level_enum::trace}, {"debug", level_enum::debug},      {"info", level_enum::info},
      {"warn", level_enum::warn},   {"warning", level_enum::warn},     {"error", level_enum::err},
      {"critical", level_enum::critical}, {"off", level_enum::off}};
  for (const auto& [level_name, level] : kLevels) {
    if (name == level_name) return level;
  }
  return invalid_argument("unknown log level '" + std::string(name) +
                          "' (use trace, debug, info, warn, error, critical or off)");
}

void configure_logging(const LoggingOptions& options, spdlog::sink_ptr sink) {
  if (!sink) sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  sink->set_formatter(make_log_formatter(options.format));

  // Both loggers share the sink (one lock, lines never interleave); neither sets a
  // formatter of its own, which would replace the sink's.
  auto main_logger = std::make_shared<spdlog::logger>("pagoda", sink);
  main_logger->set_level(options.level);
  spdlog::set_default_logger(main_logger);

  auto access = std::make_shared<spdlog::logger>(std::string(kAccessLoggerName), sink);
  access->set_level(options.level);
  std::lock_guard lock(access_mutex);
  access_log = {std::move(access), options.format, options.log_prompts};
}

void log_access(const AccessRecord& record) {
  AccessLog log;
  {
    std::lock_guard lock(access_mutex);
    log = access_log;
  }
  if (!log.logger) return;  // logging not configured: nothing to write to
  if (!log.logger->should_log(spdlog::level::info)) return;
  log.logger->info(format_access_line(record, log.format, log.log_prompts));
}

}  // namespace pagoda::server
