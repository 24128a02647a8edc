// stories260K (F32) from BOS alone, 256 greedy steps, free-running: the text must be
// exactly the reference's (reference/stories260K-greedy.txt, which is also the text
// Karpathy's llama2.c README gives for this model at temperature 0).

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "model/model_harness.h"

namespace pagoda::model::testing {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class GreedyStory : public ::testing::TestWithParam<backend::CpuNumerics> {};

// Both numerics: the engine's (kFast) rounds otherwise than the reference, yet no step of
// this run is close enough to a tie for that to change a choice.
TEST_P(GreedyStory, Stories260KFromBosReproducesTheReferenceText) {
  LoadedModel m = load("stories260K.gguf", {}, GetParam());
  ASSERT_TRUE(m.model && m.tokenizer);
  constexpr int kSteps = 256;
  Sequence seq(*m.model, *m.backend, kSteps + 1);

  std::vector<int32_t> generated;
  int32_t token = m.tokenizer->bos();
  for (int step = 0; step < kSteps; ++step) {
    const int32_t input[] = {token};
    const Expected<std::vector<float>> logits = seq.feed(input);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    token = argmax(*logits);
    generated.push_back(token);
  }
  // The file holds the text and a final line break.
  const std::string expected = read_text(reference_path("stories260K-greedy.txt"));
  EXPECT_EQ(m.tokenizer->decode(generated) + "\n", expected);
}

INSTANTIATE_TEST_SUITE_P(Numerics, GreedyStory,
                         ::testing::Values(backend::CpuNumerics::kReference, backend::CpuNumerics::kFast),
                         [](const auto& info) {
                           return info.param == backend::CpuNumerics::kFast ? "Fast" : "Reference";
                         });

}  // namespace
}  // namespace pagoda::model::testing
