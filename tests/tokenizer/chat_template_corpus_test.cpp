// The chat template corpus: every conversation of tests/data/chat_templates/
// conversations.json through every template (real ones from tests/data/reference, the
// default model's own, the ChatML default and our coverage templates), rendered by our
// interpreter and compared with Python's jinja2 as Hugging Face configures it.
//
// jinja2's renders come from tests/tools/render_chat_templates.py, which the CTest
// fixture tokenizer_jinja2_renders runs (with .venv/, made by scripts/python_env.sh)
// into the build directory before this test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gguf/reader.h"
#include "test_data.h"
#include "tokenizer/chat_template.h"

namespace pagoda::tokenizer {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kDataDir = fs::path(PAGODA_SOURCE_DIR) / "tests/data/chat_templates";
const fs::path kReferenceDir = pagoda::testing::reference_path("chat_templates");
const fs::path kDefaultModel =
    fs::path(PAGODA_SOURCE_DIR) / "models/SmolLM2-135M-Instruct.Q4_1.gguf";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Json load_corpus() {
  return Json::parse(read_file(kDataDir / "conversations.json"));
}

// Named as the Python script names them: "<folder holding chat_templates>/<stem>" and
// "gguf/<model file stem>".
std::map<std::string, std::string> load_templates() {
  std::map<std::string, std::string> templates;
  for (const fs::path& dir : {kDataDir, kReferenceDir}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".jinja") continue;
      templates[dir.parent_path().filename().string() + "/" + entry.path().stem().string()] =
          read_file(entry.path());
    }
  }
  if (fs::exists(kDefaultModel)) {
    auto reader = gguf::Reader::open(kDefaultModel.string());
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    if (reader.ok()) {
      auto choice = chat_template_for_model(*reader);
      EXPECT_TRUE(choice.ok()) << choice.status().message();
      if (choice.ok() && !choice->is_default)
        templates["gguf/" + kDefaultModel.stem().string()] = choice->source;
    }
  }
  return templates;
}

struct Render {
  std::string key;  // "<conversation>/prompt" or "<conversation>/no-prompt"
  Expected<std::string> result;
};

std::vector<Render> render_corpus(const ChatTemplate& tmpl, const Json& corpus) {
  ChatRenderOptions options;
  options.now = corpus["now"].get<std::time_t>();
  std::vector<Render> renders;
  for (const Json& conversation : corpus["conversations"]) {
    Json extra = corpus["variables"];
    if (conversation.contains("extra")) {
      for (const auto& [key, value] : conversation["extra"].items()) extra[key] = value;
    }
    for (const bool prompt : {false, true}) {
      renders.push_back(
          {conversation["name"].get<std::string>() + (prompt ? "/prompt" : "/no-prompt"),
           tmpl.render(conversation["messages"], prompt, extra, options)});
    }
  }
  return renders;
}

TEST(ChatTemplateCorpus, EveryTemplateParsesAndRendersTheChatMLDefaultCleanly) {
  const Json corpus = load_corpus();
  const auto templates = load_templates();
  ASSERT_GE(templates.size(), 7u);  // 5 of ours + 2 reference templates (+ the model's)
  ASSERT_TRUE(templates.count("data/chatml"));
  for (const auto& [name, source] : templates) {
    SCOPED_TRACE(name);
    auto tmpl = ChatTemplate::parse(source);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
    for (const Render& render : render_corpus(*tmpl, corpus)) {
      if (name == "data/chatml") {
        EXPECT_TRUE(render.result.ok()) << render.key << ": " << render.result.status().message();
      }
    }
  }
}

TEST(ChatTemplateCorpus, ChatMLDefaultIsTheCoveredTemplate) {
  EXPECT_EQ(std::string(kChatMLTemplate), read_file(kDataDir / "chatml.jinja"))
      << "tests/data/chat_templates/chatml.jinja must hold kChatMLTemplate, so the corpus covers "
         "it";
}

TEST(ChatTemplateCorpus, DefaultModelShipsItsOwnTemplate) {
  PAGODA_SKIP_IF_MISSING(kDefaultModel.string());
  auto reader = gguf::Reader::open(kDefaultModel.string());
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto choice = chat_template_for_model(*reader);
  ASSERT_TRUE(choice.ok()) << choice.status().message();
  EXPECT_FALSE(choice->is_default);
  EXPECT_EQ(choice->name, "tokenizer.chat_template");
  EXPECT_NE(choice->source.find("<|im_start|>"), std::string::npos);
}

TEST(ChatTemplateCorpus, MatchesJinja2) {
  const fs::path renders_path = PAGODA_JINJA2_RENDERS;
  if (!fs::exists(renders_path)) {
    GTEST_SKIP()
        << "no jinja2 renders at " << renders_path
        << ": run through ctest (fixture tokenizer_jinja2_renders) after scripts/python_env.sh";
  }
  const Json expected = Json::parse(read_file(renders_path));
  const Json corpus = load_corpus();
  const auto templates = load_templates();
  ASSERT_EQ(expected["templates"].size(), templates.size())
      << "jinja2 and this test see different templates";
  size_t compared = 0;
  for (const auto& [name, source] : templates) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(expected["templates"].contains(name)) << "jinja2 did not render " << name;
    const Json& reference = expected["templates"][name];
    ASSERT_EQ(reference["source"].get<std::string>(), source)
        << "stale renders: rerun the ctest fixture";
    auto tmpl = ChatTemplate::parse(source);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().message();
    for (const Render& render : render_corpus(*tmpl, corpus)) {
      SCOPED_TRACE(render.key);
      ASSERT_TRUE(reference["renders"].contains(render.key));
      const Json& want = reference["renders"][render.key];
      if (want.contains("text")) {
        ASSERT_TRUE(render.result.ok()) << render.result.status().message();
        EXPECT_EQ(*render.result, want["text"].get<std::string>());
      } else {
        ASSERT_FALSE(render.result.ok())
            << "jinja2 failed with: " << want["error"].get<std::string>();
        if (want["raised"].get<bool>()) {
          EXPECT_EQ(render.result.status().message(), want["error"].get<std::string>());
        }
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, templates.size() * corpus["conversations"].size() * 2);
}

}  // namespace
}  // namespace pagoda::tokenizer
