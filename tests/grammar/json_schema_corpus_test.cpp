// The JSON Schema corpus (tests/data/json_schema/*.json): each file holds a schema and
// the instances its grammar must accept ("valid", written both compact and pretty-printed
// with a 2-space indent; "valid_texts", exactly as given) and reject ("invalid", both
// ways; "invalid_texts", as given). Every grammar is parsed, compiled against an empty
// vocabulary (byte-level matching) and run through the matcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace pagoda::grammar {
namespace {

using Json = nlohmann::ordered_json;

const std::filesystem::path kCorpusDir = std::filesystem::path(PAGODA_SOURCE_DIR) / "tests/data/json_schema";

std::vector<std::string> corpus_names() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpusDir, error)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool matches(const std::shared_ptr<const CompiledGrammar>& grammar, std::string_view text) {
  GrammarMatcher matcher(grammar);
  return matcher.accept_bytes(text) && matcher.can_terminate();
}

class JsonSchemaCorpus : public ::testing::TestWithParam<std::string> {};

TEST(JsonSchemaCorpusFiles, AtLeastForty) { EXPECT_GE(corpus_names().size(), 40u); }

TEST_P(JsonSchemaCorpus, AcceptsValidAndRejectsInvalid) {
  std::ifstream file(kCorpusDir / (GetParam() + ".json"));
  ASSERT_TRUE(file) << "cannot open " << GetParam();
  const Json corpus = Json::parse(file);
  const std::string gbnf_text = [&] {
    auto text = json_schema_to_gbnf(corpus.at("schema"));
    EXPECT_TRUE(text.ok()) << text.status().message();
    return text.ok() ? *text : std::string();
  }();
  ASSERT_FALSE(gbnf_text.empty());
  auto grammar = parse_gbnf(gbnf_text);
  ASSERT_TRUE(grammar.ok()) << grammar.status().message() << "\n" << gbnf_text;
  auto compiled = compile_grammar(*grammar, VocabIndex::create({}, {}));
  ASSERT_TRUE(compiled.ok()) << compiled.status().message() << "\n" << gbnf_text;

  for (const Json& instance : corpus.at("valid")) {
    EXPECT_TRUE(matches(*compiled, instance.dump())) << "rejected valid " << instance.dump() << "\n" << gbnf_text;
    EXPECT_TRUE(matches(*compiled, instance.dump(2))) << "rejected valid\n" << instance.dump(2) << "\n" << gbnf_text;
  }
  for (const Json& text : corpus.value("valid_texts", Json::array())) {
    EXPECT_TRUE(matches(*compiled, text.get<std::string>())) << "rejected valid text " << text.get<std::string>();
  }
  for (const Json& instance : corpus.at("invalid")) {
    EXPECT_FALSE(matches(*compiled, instance.dump())) << "accepted invalid " << instance.dump() << "\n" << gbnf_text;
    EXPECT_FALSE(matches(*compiled, instance.dump(2))) << "accepted invalid\n" << instance.dump(2);
  }
  for (const Json& text : corpus.value("invalid_texts", Json::array())) {
    EXPECT_FALSE(matches(*compiled, text.get<std::string>())) << "accepted invalid text " << text.get<std::string>();
  }
}

INSTANTIATE_TEST_SUITE_P(Files, JsonSchemaCorpus, ::testing::ValuesIn(corpus_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace pagoda::grammar
