// The output parsers: whole answers and streams (fed whole, byte by byte, and split at
// every byte), for every family; text that is not a call stays content.

#include "server/tools/tool_call_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pagoda::server::tools {
namespace {

// call_1, call_2, ...
ToolCallIdSource Counter() {
  return [n = 0]() mutable { return "call_" + std::to_string(++n); };
}

struct Expected {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

void ExpectParsed(ToolFamily family, const std::string& text, const Expected& expected) {
  const ParsedOutput parsed = parse_tool_calls(family, text, Counter());
  EXPECT_EQ(parsed.content, expected.content) << text;
  ASSERT_EQ(parsed.calls.size(), expected.calls.size()) << text;
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    EXPECT_EQ(parsed.calls[i].id, "call_" + std::to_string(i + 1));
    EXPECT_EQ(parsed.calls[i].name, expected.calls[i].first) << text;
    EXPECT_EQ(parsed.calls[i].arguments, expected.calls[i].second) << text;
  }
}

// What a stream amounts to: deltas merged (content joined, each call's pieces joined),
// checking the pieces' rules on the way: a call's first piece has its id, name and
// empty arguments, and comes before any other piece of it; calls start in index order.
ParsedOutput Merge(const std::vector<StreamDelta>& deltas) {
  ParsedOutput merged;
  for (const StreamDelta& delta : deltas) {
    merged.content += delta.content;
    for (const ToolCallDelta& piece : delta.calls) {
      if (piece.first()) {
        EXPECT_EQ(piece.index, static_cast<int>(merged.calls.size()));
        EXPECT_EQ(piece.arguments, "");
        EXPECT_FALSE(piece.name.empty());
        merged.calls.push_back({piece.id, piece.name, ""});
      } else {
        EXPECT_LT(piece.index, static_cast<int>(merged.calls.size()));
        EXPECT_TRUE(piece.name.empty());
        EXPECT_FALSE(piece.arguments.empty());
        if (piece.index < static_cast<int>(merged.calls.size())) {
          merged.calls[piece.index].arguments += piece.arguments;
        }
      }
    }
  }
  return merged;
}

ParsedOutput StreamInPieces(ToolFamily family, const std::string& text,
                            const std::vector<size_t>& cuts) {
  ToolCallStreamParser parser(family, /*incremental=*/true, Counter());
  std::vector<StreamDelta> deltas;
  size_t start = 0;
  for (const size_t cut : cuts) {
    parser.feed(std::string_view(text).substr(start, cut - start), deltas);
    start = cut;
  }
  parser.feed(std::string_view(text).substr(start), deltas);
  parser.finish(deltas);
  return Merge(deltas);
}

void ExpectSame(const ParsedOutput& got, const Expected& expected, const std::string& what) {
  EXPECT_EQ(got.content, expected.content) << what;
  ASSERT_EQ(got.calls.size(), expected.calls.size()) << what;
  for (size_t i = 0; i < got.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, expected.calls[i].first) << what;
    EXPECT_EQ(got.calls[i].arguments, expected.calls[i].second) << what;
  }
}

// The stream gives the whole parse's result however the text is cut: whole, one byte at
// a time, and in two pieces cut at every byte.
void ExpectStreamed(ToolFamily family, const std::string& text, const Expected& expected) {
  ExpectSame(StreamInPieces(family, text, {}), expected, "whole: " + text);
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  ExpectSame(StreamInPieces(family, text, every), expected, "bytewise: " + text);
  for (size_t cut = 1; cut < text.size(); ++cut) {
    ExpectSame(StreamInPieces(family, text, {cut}), expected,
               "cut at " + std::to_string(cut) + ": " + text);
  }
}

void ExpectBoth(ToolFamily family, const std::string& text, const Expected& expected) {
  ExpectParsed(family, text, expected);
  ExpectStreamed(family, text, expected);
}

TEST(ToolCallParser, RandomIdsAreCallAnd24Alphanumerics) {
  const std::string id = random_tool_call_id();
  ASSERT_EQ(id.size(), 29u);
  EXPECT_EQ(id.substr(0, 5), "call_");
  for (const char c : id.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << id;
  EXPECT_NE(random_tool_call_id(), id);
}

TEST(ToolCallParser, HermesCalls) {
  const auto family = ToolFamily::kHermes;
  ExpectBoth(family, "Hello there", {"Hello there", {}});
  ExpectBoth(family,
             "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
             "</tool_call>",
             {"", {{"get_weather", R"({"city": "Paris"})"}}});
  ExpectBoth(family,
             "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
             "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, {\"y\": \"}\"}]}}\n"
             "</tool_call>",
             {"", {{"a", "{}"}, {"b", R"({"x": [1, {"y": "}"}]})"}}});
  ExpectBoth(family,
             "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": 1}}\n"
             "</tool_call>\nDone.",
             {"Let me check.\n\nDone.", {{"f", R"({"q": 1})"}}});
  // Arguments as a JSON string are its text; missing arguments are an empty object.
  ExpectBoth(family,
             "<tool_call>{\"arguments\": \"{\\\"a\\\": 1}\", \"name\": \"f\"}</tool_call>",
             {"", {{"f", R"({"a": 1})"}}});
  ExpectBoth(family, "<tool_call>{\"name\": \"f\"}</tool_call>", {"", {{"f", "{}"}}});
}

TEST(ToolCallParser, HermesTextThatIsNoCallStaysContent) {
  const auto family = ToolFamily::kHermes;
  for (const std::string text :
       {"a < b and <tool", "<tool_call>\n{\"name\": 3}\n</tool_call>",
        "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>not json</tool_call> after",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>"}) {
    ExpectParsed(family, text, {text, {}});
  }
}

// A turn that ends right after the call's JSON, its closing tag missing, made the call.
TEST(ToolCallParser, AMissingClosingAtTheEndStillMadeTheCall) {
  ExpectBoth(ToolFamily::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n",
             {"", {{"f", R"({"a": 1})"}}});
  ExpectBoth(ToolFamily::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_",
             {"", {{"f", "{}"}}});
  ExpectBoth(ToolFamily::kMistral, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}",
             {"", {{"a", "{}"}}});
  ExpectBoth(ToolFamily::kGeneric, R"({"tool_calls": [{"name": "f", "arguments": {}}])",
             {"", {{"f", "{}"}}});
}

TEST(ToolCallParser, Llama3Calls) {
  const auto family = ToolFamily::kLlama3;
  ExpectBoth(family, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
             {"", {{"get_weather", R"({"city": "Oslo"})"}}});
  ExpectBoth(family, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}", {"", {{"f", "{}"}}});
  ExpectBoth(family, "{\n  \"name\": \"f\",\n  \"parameters\": {\"k\": null}\n}",
             {"", {{"f", R"({"k": null})"}}});
  ExpectBoth(family,
             "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"n\": 2}}",
             {"", {{"a", "{}"}, {"b", R"({"n": 2})"}}});
  ExpectBoth(family, "The answer is {\"x\": 1}.", {"The answer is {\"x\": 1}.", {}});
  ExpectParsed(family, "{\"name\": \"f\", \"parameters\": {\"a\"",
               {"{\"name\": \"f\", \"parameters\": {\"a\"", {}});
}

TEST(ToolCallParser, MistralCalls) {
  const auto family = ToolFamily::kMistral;
  ExpectBoth(family,
             "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", "
             "\"arguments\": {\"q\": \"x\"}}]",
             {"", {{"a", "{}"}, {"b", R"({"q": "x"})"}}});
  ExpectBoth(family, "[TOOL_CALLS] {\"name\": \"a\", \"arguments\": {\"k\": true}}",
             {"", {{"a", R"({"k": true})"}}});
  ExpectBoth(family, "No tools needed: [1, 2]", {"No tools needed: [1, 2]", {}});
  ExpectParsed(family, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {",
               {"[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {", {}});
}

TEST(ToolCallParser, GenericAnswers) {
  const auto family = ToolFamily::kGeneric;
  ExpectBoth(family, R"({"tool_calls": [{"name": "f", "arguments": {"a": 1}}]})",
             {"", {{"f", R"({"a": 1})"}}});
  ExpectBoth(family,
             R"({"tool_calls": [{"name": "f", "arguments": {}}, {"name": "g", "arguments": {"b": "{"}}]})",
             {"", {{"f", "{}"}, {"g", R"({"b": "{"})"}}});
  ExpectBoth(family, R"({"content": "Hi \"there\"\n"})", {"Hi \"there\"\n", {}});
  ExpectBoth(family, R"({"answer": 42})", {R"({"answer": 42})", {}});
  ExpectBoth(family, "Plain text, {braces} too.", {"Plain text, {braces} too.", {}});
  ExpectParsed(family, R"({"tool_calls": []})", {R"({"tool_calls": []})", {}});
}

// One call fed a byte at a time: the call starts the moment its name is whole, and
// every byte of its arguments goes out as soon as it arrives.
TEST(ToolCallParser, StreamSendsArgumentsAsTheyCome) {
  const std::string head = "<tool_call>\n{\"name\": \"get_weather\"";
  const std::string arguments = R"({"city": "Paris"})";
  const std::string text = head + ", \"arguments\": " + arguments + "}\n</tool_call>";
  ToolCallStreamParser parser(ToolFamily::kHermes, /*incremental=*/true, Counter());
  std::vector<StreamDelta> all;
  std::string sent_arguments;
  for (size_t i = 0; i < text.size(); ++i) {
    std::vector<StreamDelta> deltas;
    parser.feed(text.substr(i, 1), deltas);
    for (const StreamDelta& delta : deltas) {
      EXPECT_EQ(delta.content, "") << i;
      for (const ToolCallDelta& piece : delta.calls) {
        EXPECT_EQ(piece.index, 0);
        if (piece.first()) {
          EXPECT_EQ(i + 1, head.size()) << "the call starts when its name is whole";
          EXPECT_EQ(piece.id, "call_1");
          EXPECT_EQ(piece.name, "get_weather");
        } else {
          EXPECT_EQ(piece.arguments, text.substr(i, 1)) << i;
          sent_arguments += piece.arguments;
        }
      }
    }
    all.insert(all.end(), deltas.begin(), deltas.end());
  }
  std::vector<StreamDelta> last;
  parser.finish(last);
  EXPECT_TRUE(last.empty());
  EXPECT_EQ(sent_arguments, arguments);
  EXPECT_EQ(parser.calls_made(), 1);
}

// Text that may open a call is held back, and sent as soon as it cannot.
TEST(ToolCallParser, StreamHoldsBackAPossibleOpening) {
  ToolCallStreamParser parser(ToolFamily::kHermes, /*incremental=*/true, Counter());
  std::vector<StreamDelta> deltas;
  parser.feed("Hi <tool", deltas);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].content, "Hi ");
  deltas.clear();
  parser.feed("box>", deltas);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].content, "<toolbox>");
  deltas.clear();
  parser.feed(" <", deltas);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].content, " ");
  deltas.clear();
  parser.finish(deltas);
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].content, "<");
  EXPECT_EQ(parser.calls_made(), 0);
}

// A stream cut off inside a call (max_tokens) keeps the call as far as it went.
TEST(ToolCallParser, StreamCutInsideACallKeepsWhatWasSent) {
  ToolCallStreamParser parser(ToolFamily::kHermes, /*incremental=*/true, Counter());
  std::vector<StreamDelta> deltas;
  parser.feed("<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": ", deltas);
  parser.finish(deltas);
  const ParsedOutput merged = Merge(deltas);
  EXPECT_EQ(merged.content, "");
  ASSERT_EQ(merged.calls.size(), 1u);
  EXPECT_EQ(merged.calls[0].name, "f");
  EXPECT_EQ(merged.calls[0].arguments, "{\"a\": ");
}

// Content after a call comes in a delta of its own, after the call's pieces.
TEST(ToolCallParser, ContentAfterACallIsALaterDelta) {
  ToolCallStreamParser parser(ToolFamily::kHermes, /*incremental=*/true, Counter());
  std::vector<StreamDelta> deltas;
  parser.feed("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\nok", deltas);
  parser.finish(deltas);
  ASSERT_EQ(deltas.size(), 2u);
  ASSERT_EQ(deltas[0].calls.size(), 2u);
  EXPECT_EQ(deltas[0].content, "");
  EXPECT_EQ(deltas[0].calls[0].name, "f");
  EXPECT_EQ(deltas[0].calls[1].arguments, "{}");
  EXPECT_EQ(deltas[1].content, "\nok");
  EXPECT_TRUE(deltas[1].calls.empty());
}

}  // namespace
}  // namespace pagoda::server::tools
