#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda::loadgen {
namespace {

std::vector<SseEvent> parse_all(std::string_view stream) {
  SseParser parser;
  std::vector<SseEvent> events;
  EXPECT_TRUE(parser.feed(stream, events).ok());
  return events;
}

std::vector<std::string> data_of(const std::vector<SseEvent>& events) {
  std::vector<std::string> data;
  for (const SseEvent& e : events) data.push_back(e.data);
  return data;
}

TEST(SseParser, OneEventPerBlankLine) {
  const auto events = parse_all("data: {\"a\":1}\n\ndata: [DONE]\n\n");
  EXPECT_EQ(data_of(events), (std::vector<std::string>{"{\"a\":1}", "[DONE]"}));
  EXPECT_EQ(events[0].type, "message");
}

TEST(SseParser, MultiLineDataJoinsWithNewlines) {
  EXPECT_EQ(data_of(parse_all("data: first\ndata: second\ndata:\ndata: fourth\n\n")),
            (std::vector<std::string>{"first\nsecond\n\nfourth"}));
}

TEST(SseParser, CommentsAndUnknownFieldsAreIgnored) {
  const auto events = parse_all(": keep-alive\n\n:\ndata: x\nretry: 100\nfoo: bar\n\n: bye\n\n");
  EXPECT_EQ(data_of(events), (std::vector<std::string>{"x"}));
}

TEST(SseParser, OnlyOneLeadingSpaceIsRemoved) {
  EXPECT_EQ(data_of(parse_all("data:x\n\ndata:  y\n\ndata\n\n")),
            (std::vector<std::string>{"x", " y", ""}));
}

TEST(SseParser, EventTypeAndIdAreKept) {
  const auto events = parse_all("event: error\nid: 7\ndata: boom\n\ndata: later\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, "error");
  EXPECT_EQ(events[0].id, "7");
  EXPECT_EQ(events[1].type, "message");  // the type resets, the id persists
  EXPECT_EQ(events[1].id, "7");
}

TEST(SseParser, BlankLinesWithoutDataDispatchNothing) {
  EXPECT_TRUE(parse_all("\n\n\nevent: ping\n\n").empty());
}

TEST(SseParser, AllLineEndings) {
  EXPECT_EQ(data_of(parse_all("data: a\r\n\r\ndata: b\r\rdata: c\n\n")),
            (std::vector<std::string>{"a", "b", "c"}));
}

TEST(SseParser, UnterminatedEventIsNotDispatched) {
  SseParser parser;
  std::vector<SseEvent> events;
  ASSERT_TRUE(parser.feed("data: done\n\ndata: half", events).ok());
  EXPECT_EQ(data_of(events), (std::vector<std::string>{"done"}));
  ASSERT_TRUE(parser.feed("\n", events).ok());
  EXPECT_EQ(events.size(), 1u);  // still needs its blank line
}

TEST(SseParser, ByteOrderMarkAtTheStartIsDropped) {
  EXPECT_EQ(data_of(parse_all("\xEF\xBB\xBF"
                              "data: x\n\n")),
            (std::vector<std::string>{"x"}));
}

// A stream with every feature, fed split at each byte boundary (and byte by byte),
// gives the same events as fed at once.
TEST(SseParser, SplitAtEveryByteBoundaryGivesTheSameEvents) {
  const std::string stream =
      "\xEF\xBB\xBF: comment\r\nevent: add\r\ndata: {\"text\": \"a\"}\r\n\r\n"
      "data: line one\rdata: line two\r\rid: 3\ndata:no-space\n\n"
      ": ping\n\ndata: [DONE]\n\n";
  const std::vector<SseEvent> whole = parse_all(stream);
  ASSERT_EQ(data_of(whole), (std::vector<std::string>{"{\"text\": \"a\"}", "line one\nline two",
                                                      "no-space", "[DONE]"}));
  EXPECT_EQ(whole[0].type, "add");
  for (size_t split = 0; split <= stream.size(); ++split) {
    SseParser parser;
    std::vector<SseEvent> events;
    ASSERT_TRUE(parser.feed(std::string_view(stream).substr(0, split), events).ok());
    ASSERT_TRUE(parser.feed(std::string_view(stream).substr(split), events).ok());
    ASSERT_EQ(data_of(events), data_of(whole)) << "split at " << split;
    EXPECT_EQ(events[0].type, "add");
    EXPECT_EQ(events[2].id, "3");
  }
  SseParser parser;
  std::vector<SseEvent> events;
  for (char c : stream) ASSERT_TRUE(parser.feed(std::string_view(&c, 1), events).ok());
  EXPECT_EQ(data_of(events), data_of(whole));
}

TEST(SseParser, OversizedEventIsAnErrorAndSticks) {
  SseParser parser(32);
  std::vector<SseEvent> events;
  EXPECT_TRUE(parser.feed("data: short\n\n", events).ok());
  EXPECT_FALSE(parser.feed("data: " + std::string(40, 'x'), events).ok());
  EXPECT_FALSE(parser.feed("\n\ndata: ok\n\n", events).ok());
  EXPECT_EQ(events.size(), 1u);
}

}  // namespace
}  // namespace pagoda::loadgen
