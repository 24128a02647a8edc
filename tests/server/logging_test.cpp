#include "server/logging/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

AccessRecord sample_record() {
  AccessRecord r;
  r.request_id = "3f9c2a1e7b4d";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.remote = "127.0.0.1:53214";
  r.prompt_tokens = 12;
  r.completion_tokens = 34;
  r.ttft_seconds = 0.1234;
  r.latency_seconds = 1.5;
  r.bytes_sent = 5678;
  r.prompt = "my secret prompt";
  return r;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Sends the logs to a string for the test, and back to stderr afterwards (the sink
// refers to the stream, which the test outlives).
class LoggingTest : public ::testing::Test {
 protected:
  void configure(LogFormat format, spdlog::level::level_enum level, bool log_prompts) {
    configure_logging({.format = format, .level = level, .log_prompts = log_prompts},
                      std::make_shared<spdlog::sinks::ostream_sink_mt>(out_, /*force_flush=*/true));
  }
  void TearDown() override { configure_logging({}); }
  std::ostringstream out_;
};

TEST(LoggingAccess, TextLine) {
  EXPECT_EQ(format_access_line(sample_record(), LogFormat::kText, false),
            "3f9c2a1e7b4d POST /v1/chat/completions 200 127.0.0.1:53214 prompt_tokens=12 "
            "completion_tokens=34 ttft=0.123s latency=1.500s bytes=5678");
  EXPECT_EQ(format_access_line(sample_record(), LogFormat::kText, true),
            "3f9c2a1e7b4d POST /v1/chat/completions 200 127.0.0.1:53214 prompt_tokens=12 "
            "completion_tokens=34 ttft=0.123s latency=1.500s bytes=5678 prompt=\"my secret prompt\"");
}

TEST(LoggingAccess, TextLineWithoutGenerationOrValues) {
  AccessRecord r;
  r.method = "GET";
  r.path = "/health";
  r.status = 200;
  r.latency_seconds = 0.0004;
  r.bytes_sent = 120;
  EXPECT_EQ(format_access_line(r, LogFormat::kText, false), "- GET /health 200 - latency=0.000s bytes=120");
}

TEST(LoggingAccess, TextLineEscapesWhatClientsControl) {
  AccessRecord r = sample_record();
  r.request_id = "id\nFAKE 200";
  r.path = "/v1/x\"y\\z\x01";
  r.prompt = "line one\nline \"two\" caf\xc3\xa9";
  const std::string line = format_access_line(r, LogFormat::kText, true);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.rfind("\"id\\x0aFAKE 200\" POST /v1/x\\\"y\\\\z\\x01 200 ", 0), 0u) << line;
  EXPECT_NE(line.find(" prompt=\"line one\\x0aline \\\"two\\\" caf\\xc3\\xa9\""), std::string::npos) << line;
}

TEST(LoggingAccess, JsonLine) {
  const std::string line = format_access_line(sample_record(), LogFormat::kJson, false);
  EXPECT_EQ(line,
            R"({"request_id":"3f9c2a1e7b4d","method":"POST","path":"/v1/chat/completions",)"
            R"("status":200,"remote":"127.0.0.1:53214","prompt_tokens":12,"completion_tokens":34,)"
            R"("ttft_s":0.1234,"latency_s":1.5,"bytes":5678})");
  const nlohmann::json with_prompt =
      nlohmann::json::parse(format_access_line(sample_record(), LogFormat::kJson, true));
  EXPECT_EQ(with_prompt["prompt"], "my secret prompt");

  AccessRecord r = sample_record();
  r.prompt_tokens.reset();
  r.completion_tokens.reset();
  r.ttft_seconds.reset();
  r.path = "/bad\xff\npath";
  const nlohmann::json j = nlohmann::json::parse(format_access_line(r, LogFormat::kJson, false));
  EXPECT_FALSE(j.contains("prompt_tokens"));
  EXPECT_FALSE(j.contains("ttft_s"));
  EXPECT_FALSE(j.contains("prompt"));
  EXPECT_EQ(j["path"], "/bad\xef\xbf\xbd\npath");
}

TEST(LoggingOptions, ParsesFormatsAndLevels) {
  EXPECT_EQ(*parse_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(*parse_log_format("text"), LogFormat::kText);
  EXPECT_EQ(parse_log_format("xml").status().message(), "unknown log format 'xml' (use text or json)");
  EXPECT_EQ(log_format_name(LogFormat::kJson), "json");
  EXPECT_EQ(*parse_log_level("debug"), spdlog::level::debug);
  EXPECT_EQ(*parse_log_level("warning"), spdlog::level::warn);
  EXPECT_EQ(*parse_log_level("error"), spdlog::level::err);
  EXPECT_EQ(*parse_log_level("off"), spdlog::level::off);
  EXPECT_FALSE(parse_log_level("loud").ok());
}

TEST_F(LoggingTest, JsonLinesForEveryLogger) {
  configure(LogFormat::kJson, spdlog::level::info, false);
  spdlog::info("model {} loaded", "x\"y\nz");
  spdlog::debug("not shown at info");
  log_access(sample_record());
  const std::vector<std::string> got = lines(out_.str());
  ASSERT_EQ(got.size(), 2u) << out_.str();

  const nlohmann::json first = nlohmann::json::parse(got[0]);
  EXPECT_TRUE(std::regex_match(first["ts"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << first["ts"];
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["logger"], "pagoda");
  EXPECT_EQ(first["msg"], "model x\"y\nz loaded");

  const nlohmann::json access = nlohmann::json::parse(got[1]);
  EXPECT_EQ(access["logger"], "access");
  EXPECT_EQ(access["msg"], "request");
  EXPECT_EQ(access["request_id"], "3f9c2a1e7b4d");
  EXPECT_EQ(access["status"], 200);
  EXPECT_EQ(access["completion_tokens"], 34);
  EXPECT_FALSE(access.contains("prompt"));  // private unless asked
  EXPECT_EQ(got[1].rfind(R"({"ts":")", 0), 0u);
}

TEST_F(LoggingTest, TextLinesAndPromptsWhenAsked) {
  configure(LogFormat::kText, spdlog::level::debug, true);
  spdlog::debug("step {}", 3);
  log_access(sample_record());
  const std::vector<std::string> got = lines(out_.str());
  ASSERT_EQ(got.size(), 2u) << out_.str();
  EXPECT_TRUE(std::regex_match(got[0], std::regex(R"(\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[debug\] step 3)")))
      << got[0];
  EXPECT_TRUE(std::regex_match(
      got[1], std::regex(R"(\[[^\]]+\] \[access\] 3f9c2a1e7b4d POST /v1/chat/completions 200 .* prompt="my secret prompt")")))
      << got[1];
}

TEST_F(LoggingTest, LevelAppliesToAccessLines) {
  configure(LogFormat::kText, spdlog::level::warn, false);
  log_access(sample_record());
  spdlog::info("hidden");
  spdlog::warn("shown");
  const std::vector<std::string> got = lines(out_.str());
  ASSERT_EQ(got.size(), 1u) << out_.str();
  EXPECT_NE(got[0].find("[warning] shown"), std::string::npos) << got[0];
}

}  // namespace
}  // namespace pagoda::server
