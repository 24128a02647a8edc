// Family detection from the chat templates' source text.

#include "server/tools/tool_family.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "tool_test_util.h"

namespace pagoda::server::tools {
namespace {

using testing::read_template;

TEST(ToolFamily, Names) {
  EXPECT_EQ(tool_family_name(ToolFamily::kHermes), "hermes");
  EXPECT_EQ(tool_family_name(ToolFamily::kLlama3), "llama3");
  EXPECT_EQ(tool_family_name(ToolFamily::kMistral), "mistral");
  EXPECT_EQ(tool_family_name(ToolFamily::kGeneric), "generic");
}

TEST(ToolFamily, QwenIsHermes) {
  const std::string source = read_template(testing::kQwenTemplate);
  if (source.empty()) GTEST_SKIP() << "no " << testing::kQwenTemplate;
  EXPECT_EQ(detect_tool_family(source), ToolFamily::kHermes);
}

TEST(ToolFamily, Llama32IsLlama3) {
  const std::string source = read_template(testing::kLlamaTemplate);
  if (source.empty()) GTEST_SKIP() << "no " << testing::kLlamaTemplate;
  EXPECT_EQ(detect_tool_family(source), ToolFamily::kLlama3);
}

TEST(ToolFamily, MistralIsMistral) {
  EXPECT_EQ(detect_tool_family(testing::kMistralTemplate), ToolFamily::kMistral);
}

TEST(ToolFamily, Llama31NamesItsTag) {
  EXPECT_EQ(detect_tool_family("{% if tools %}{{ '<|python_tag|>' }}{% endif %}"),
            ToolFamily::kLlama3);
}

TEST(ToolFamily, TemplatesWithoutACallSyntaxAreGeneric) {
  for (const char* name : {"chatml.jinja", "alternating-roles.jinja", "features.jinja",
                           "role-mapping.jinja", "tool-namespace.jinja"}) {
    const std::string source = read_template(name);
    ASSERT_FALSE(source.empty()) << name;
    EXPECT_EQ(detect_tool_family(source), ToolFamily::kGeneric) << name;
  }
  // A template that names a syntax but never reads `tools` taught the model nothing.
  EXPECT_EQ(detect_tool_family("<tool_call>{{ messages }}"), ToolFamily::kGeneric);
}

TEST(ToolFamily, CallMarkersAreTheSyntaxsFixedStrings) {
  using Markers = std::vector<std::string_view>;
  auto markers = [](ToolFamily family) {
    const auto span = call_markers(family);
    return Markers(span.begin(), span.end());
  };
  EXPECT_EQ(markers(ToolFamily::kHermes), (Markers{"<tool_call>", "</tool_call>"}));
  EXPECT_EQ(markers(ToolFamily::kLlama3), (Markers{"<|python_tag|>"}));
  EXPECT_EQ(markers(ToolFamily::kMistral), (Markers{"[TOOL_CALLS]"}));
  EXPECT_TRUE(markers(ToolFamily::kGeneric).empty());
}

}  // namespace
}  // namespace pagoda::server::tools
