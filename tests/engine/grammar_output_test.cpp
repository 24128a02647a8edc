// Constrained decoding through the engine on stories260K: the output follows the
// grammar whatever the model prefers, a complete grammar ends the request with "stop",
// a lazy grammar starts at its trigger, log-probabilities stay the raw model's, and
// every choice of a sampled request (n > 1, batched) follows the grammar.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/grammar_vocab.h"
#include "engine/session.h"
#include "engine_test_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "model/model.h"
#include "stories_fixture.h"

namespace pagoda::engine {
namespace {

// `gbnf` compiled for `vocab` into a constraint (null, with a test failure, on an error).
std::shared_ptr<const GrammarConstraint> compile_constraint(
    const std::string& gbnf, std::shared_ptr<const grammar::VocabIndex> vocab,
    std::vector<std::string> triggers = {}) {
  Expected<grammar::Grammar> parsed = grammar::parse_gbnf(gbnf);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return nullptr;
  auto compiled = grammar::compile_grammar(*parsed, std::move(vocab));
  EXPECT_TRUE(compiled.ok()) << compiled.status().message();
  if (!compiled.ok()) return nullptr;
  return std::make_shared<GrammarConstraint>(
      GrammarConstraint{std::move(compiled).value(), std::move(triggers)});
}

class GrammarOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    loaded_ = testing::load_shared_model("stories260K.gguf");
    ASSERT_TRUE(loaded_.model && loaded_.tokenizer);
    vocab_ = make_vocab_index(*loaded_.tokenizer);
  }

  std::shared_ptr<const GrammarConstraint> constraint(const std::string& gbnf,
                                                      std::vector<std::string> triggers = {}) {
    return compile_constraint(gbnf, vocab_, std::move(triggers));
  }

  EngineRequest request(const std::string& prompt, int32_t max_tokens) const {
    EngineRequest r;
    r.prompt = loaded_.tokenizer->encode(prompt, /*add_special=*/true, /*parse_special=*/false);
    r.sampling.temperature = 0.0f;
    r.stop.max_tokens = max_tokens;
    return r;
  }

  GenerationResult generate(const EngineRequest& r) {
    std::unique_ptr<Session> session = testing::make_session(loaded_, 256);
    if (!session) return {};
    Expected<GenerationResult> result = session->generate(r, nullptr);
    EXPECT_TRUE(result.ok()) << result.status().message();
    return result.ok() ? std::move(result).value() : GenerationResult{};
  }

  testing::LoadedStories loaded_;
  std::shared_ptr<const grammar::VocabIndex> vocab_;
};

// The object a schema-constrained output must be, checked field by field.
constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "happy": {"type": "boolean"}
  },
  "required": ["name", "age", "happy"],
  "additionalProperties": false
})";

void expect_person(const std::string& text) {
  const nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(value.is_discarded()) << "not JSON: " << text;
  ASSERT_TRUE(value.is_object()) << text;
  EXPECT_EQ(value.size(), 3u) << text;
  ASSERT_TRUE(value.contains("name") && value["name"].is_string()) << text;
  EXPECT_LE(value["name"].get<std::string>().size(), 12u) << text;  // ASCII or not, <= 12 characters
  ASSERT_TRUE(value.contains("age") && value["age"].is_number_integer()) << text;
  EXPECT_GE(value["age"].get<int64_t>(), 0) << text;
  EXPECT_LE(value["age"].get<int64_t>(), 120) << text;
  ASSERT_TRUE(value.contains("happy") && value["happy"].is_boolean()) << text;
}

// kPersonSchema as GBNF (empty, with a test failure, on an error).
std::string person_gbnf() {
  Expected<std::string> gbnf = grammar::json_schema_to_gbnf(nlohmann::ordered_json::parse(kPersonSchema));
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().message();
  return gbnf.ok() ? *gbnf : std::string();
}

TEST_F(GrammarOutput, GreedyFollowsTheGrammarAndACompleteGrammarStops) {
  // Unconstrained, the model goes on " Lily. She loved ..." (the reference text).
  EngineRequest free = request("Once upon a time, there was a little girl named", 4);
  const GenerationResult unconstrained = generate(free);
  ASSERT_EQ(unconstrained.text.rfind(" Lily", 0), 0u) << unconstrained.text;

  EngineRequest r = request("Once upon a time, there was a little girl named", 40);
  r.sampling.grammar = constraint(R"(root ::= " Tom" | " Ben")");
  ASSERT_TRUE(r.sampling.grammar);
  const GenerationResult result = generate(r);
  EXPECT_TRUE(result.text == " Tom" || result.text == " Ben") << result.text;
  EXPECT_EQ(result.finish, FinishReason::kStop);
  EXPECT_LT(result.tokens.size(), 40u);

  // The grammar allowing what the model prefers changes nothing until it is complete.
  r.sampling.grammar = constraint(R"(root ::= " Lily" | " Tom")");
  EXPECT_EQ(generate(r).text, " Lily");
}

TEST_F(GrammarOutput, ALazyGrammarStartsAtItsTrigger) {
  // BOS only: the reference text "Once upon a time, there was a little girl named Lily."
  EngineRequest r = request("", 60);
  r.sampling.grammar = constraint(R"(root ::= " named " ("Zed" | "Kim") "!")", {" named"});
  ASSERT_TRUE(r.sampling.grammar);
  const GenerationResult result = generate(r);
  const std::string prefix = "Once upon a time, there was a little girl named ";
  ASSERT_EQ(result.text.rfind(prefix, 0), 0u) << result.text;
  const std::string name = result.text.substr(prefix.size());
  EXPECT_TRUE(name == "Zed!" || name == "Kim!") << result.text;
  EXPECT_EQ(result.finish, FinishReason::kStop);
}

TEST_F(GrammarOutput, ALazyGrammarNeverTriggeredLeavesTheOutputFree) {
  EngineRequest free = request("", 20);
  const GenerationResult unconstrained = generate(free);
  EngineRequest r = free;
  r.sampling.grammar = constraint(R"(root ::= "<call>" [a-z]+ "</call>")", {"<call>"});
  const GenerationResult result = generate(r);
  EXPECT_EQ(result.text, unconstrained.text);
  EXPECT_EQ(result.tokens, unconstrained.tokens);
  EXPECT_EQ(result.finish, FinishReason::kLength);
}

TEST_F(GrammarOutput, ATextControlTokenTriggersAndIsShown) {
  // <s> (id 1) stands in for a control-token call marker such as [TOOL_CALLS]: the
  // vocabulary gives it its text, so the lazy grammar starts at it and the output shows it.
  constexpr int32_t kMarker = 1;
  ASSERT_TRUE(loaded_.tokenizer->is_control(kMarker));
  const std::vector<int32_t> text_tokens = {kMarker, 2};
  const auto vocab = make_vocab_index(*loaded_.tokenizer, text_tokens);
  EXPECT_EQ(vocab->token_bytes(kMarker), "<s>");
  EXPECT_EQ(vocab_->token_bytes(kMarker), "");
  EXPECT_EQ(vocab->token_bytes(2), "");  // </s> ends generation: a stop token, never text
  EXPECT_TRUE(vocab->is_stop_token(2));

  EngineRequest r = request("", 20);
  r.sampling.logit_bias = {{kMarker, 100.0f}};  // the model's first choice is the marker
  auto marked = std::make_shared<GrammarConstraint>(
      *compile_constraint(R"(root ::= "<s>" (" Zed" | " Kim") "!")", vocab, {"<s>"}));
  marked->shown_tokens = {kMarker};
  r.sampling.grammar = marked;
  const GenerationResult result = generate(r);
  ASSERT_FALSE(result.tokens.empty());
  EXPECT_EQ(result.tokens[0], kMarker);
  EXPECT_TRUE(result.text == "<s> Zed!" || result.text == "<s> Kim!") << result.text;
  EXPECT_EQ(result.finish, FinishReason::kStop);

  // Without the marker as text, the grammar never sees it and the output stays free.
  EngineRequest hidden = r;
  hidden.sampling.grammar = constraint(R"(root ::= "<s>" (" Zed" | " Kim") "!")", {"<s>"});
  const GenerationResult free = generate(hidden);
  EXPECT_EQ(free.text, "");
  EXPECT_EQ(free.finish, FinishReason::kLength);
}

TEST_F(GrammarOutput, LogprobsAreTheRawModelsNotTheMasked) {
  EngineRequest free = request("Once upon a time, there was a little girl named", 1);
  free.sampling.logprobs = true;
  free.sampling.top_logprobs = 5;
  const GenerationResult unconstrained = generate(free);
  EngineRequest r = free;
  r.sampling.grammar = constraint(R"(root ::= " Tom" | " Ben")");
  const GenerationResult result = generate(r);
  ASSERT_EQ(unconstrained.logprobs.size(), 1u);
  ASSERT_EQ(result.logprobs.size(), 1u);
  // The top candidates of the step are those of the model, whatever the grammar allows.
  ASSERT_EQ(result.logprobs[0].top.size(), unconstrained.logprobs[0].top.size());
  for (size_t i = 0; i < result.logprobs[0].top.size(); ++i) {
    EXPECT_EQ(result.logprobs[0].top[i].token, unconstrained.logprobs[0].top[i].token);
    EXPECT_FLOAT_EQ(result.logprobs[0].top[i].logprob, unconstrained.logprobs[0].top[i].logprob);
  }
  // The chosen token is not the model's favourite, and its log-probability says so.
  EXPECT_NE(result.tokens[0], unconstrained.tokens[0]);
  EXPECT_LT(result.logprobs[0].logprob, unconstrained.logprobs[0].logprob);
}

TEST_F(GrammarOutput, SampledJsonFollowsTheSchemaForEverySeed) {
  const auto person = constraint(person_gbnf());
  ASSERT_TRUE(person);
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    EngineRequest r = request("Once upon a time", 200);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.sampling.grammar = person;
    const GenerationResult result = generate(r);
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_EQ(result.finish, FinishReason::kStop) << result.text;
    expect_person(result.text);
  }
}

TEST(GrammarOutputBatched, EveryChoiceOfEveryRequestFollowsTheSchema) {
  model::LoadOptions load;
  load.max_batch_tokens = 256;
  load.max_logit_rows = 16;
  testing::BatchedModel m = testing::load_batched_model("stories260K.gguf", load);
  ASSERT_TRUE(m.model && m.tokenizer);
  const auto person = compile_constraint(person_gbnf(), make_vocab_index(*m.tokenizer));
  ASSERT_TRUE(person);

  EngineConfig config;
  config.scheduler.max_batched_tokens = 256;
  config.scheduler.max_running = 16;
  config.scheduler.max_model_len = 256;
  std::unique_ptr<Engine> engine = testing::make_engine(m, config);
  ASSERT_TRUE(engine);
  std::vector<EngineRequest> requests;
  for (uint64_t seed : {11u, 12u, 13u}) {
    EngineRequest r;
    r.prompt = m.tokenizer->encode("Once upon a time", true, false);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed * 100;
    r.sampling.grammar = person;
    r.stop.max_tokens = 200;
    r.n = 3;
    requests.push_back(r);
  }
  // An unconstrained request in the same steps is not constrained.
  EngineRequest free;
  free.prompt = m.tokenizer->encode("Once upon a time", true, false);
  free.sampling.temperature = 0.0f;
  free.stop.max_tokens = 30;
  requests.push_back(free);

  const std::vector<testing::Received> results = testing::run_all(*engine, requests);
  ASSERT_EQ(results.size(), 10u);
  std::set<std::string> distinct;
  for (size_t i = 0; i < 9; ++i) {
    SCOPED_TRACE("choice " + std::to_string(i));
    EXPECT_EQ(results[i].finish, FinishReason::kStop) << results[i].text;
    expect_person(results[i].text);
    distinct.insert(results[i].text);
  }
  EXPECT_GT(distinct.size(), 1u);  // the choices are sampled, not copies
  EXPECT_EQ(results[9].finish, FinishReason::kLength);
  EXPECT_EQ(results[9].text.rfind(", there was a little girl", 0), 0u) << results[9].text;
}

// Preemption drops a request's KV blocks, not its matcher: a constrained request that
// was preempted and recomputed gives the text it gives alone.
TEST(GrammarOutputBatched, PreemptedRequestsKeepTheirGrammarState) {
  model::LoadOptions load;
  load.max_batch_tokens = 96;
  load.max_logit_rows = 16;
  testing::BatchedModel m = testing::load_batched_model("stories260K.gguf", load);
  ASSERT_TRUE(m.model && m.tokenizer);
  const auto person = compile_constraint(person_gbnf(), make_vocab_index(*m.tokenizer));
  ASSERT_TRUE(person);

  std::vector<EngineRequest> requests;
  for (uint64_t i = 0; i < 12; ++i) {
    EngineRequest r;
    r.prompt = m.tokenizer->encode(i % 2 ? "Once upon a time" : "The little dog", true, false);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 500 + i;
    r.sampling.grammar = person;
    r.stop.max_tokens = 120;
    requests.push_back(r);
  }
  auto config_with_blocks = [&](int32_t n_blocks, int32_t max_running) {
    EngineConfig config;
    config.scheduler = {.max_batched_tokens = 96, .max_running = max_running, .max_model_len = 256};
    config.kv_memory.bytes = model::kv_cache_shape(m.model->config(), 1, config.block_size).block_bytes() *
                             static_cast<uint64_t>(n_blocks);
    return config;
  };
  // 20 blocks: one full-length request fits (16), twelve at once do not.
  std::unique_ptr<Engine> crowded = testing::make_engine(m, config_with_blocks(20, 16));
  ASSERT_TRUE(crowded);
  const std::vector<testing::Received> together = testing::run_all(*crowded, requests);
  EXPECT_GT(crowded->stats().scheduler.n_preemptions, 0);
  std::unique_ptr<Engine> roomy = testing::make_engine(m, config_with_blocks(16, 1));
  ASSERT_TRUE(roomy);
  ASSERT_EQ(together.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const std::vector<testing::Received> alone = testing::run_all(*roomy, {requests[i]});
    ASSERT_EQ(alone.size(), 1u);
    EXPECT_EQ(together[i].text, alone[0].text);
    EXPECT_EQ(together[i].finish, FinishReason::kStop);
    expect_person(together[i].text);
  }
}

TEST_F(GrammarOutput, AGrammarCompiledForAnotherVocabularyIsRefused) {
  EngineRequest r = request("Once", 4);
  r.sampling.grammar =
      compile_constraint(R"(root ::= "a")", grammar::VocabIndex::create({"a", "b"}, {}));
  ASSERT_TRUE(r.sampling.grammar);
  std::unique_ptr<Session> session = testing::make_session(loaded_, 64);
  ASSERT_TRUE(session);
  const Expected<GenerationResult> result = session->generate(r, nullptr);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "grammar constraint: compiled for a vocabulary of 2 tokens, the model has 512");
}

}  // namespace
}  // namespace pagoda::engine
