// The real GGUF files the tests read (tests/data/, the large random-weight models of the
// shared folder) and the default model.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>

#include "gguf/reader.h"
#include "test_data.h"
#include "test_files.h"

namespace pagoda::gguf {
namespace {

using ::pagoda::testing::model_path;
using ::pagoda::testing::open_gguf_or_fail;
using ::pagoda::testing::reference_path;

TEST(RealModels, Stories260K) {
  const Reader reader = open_gguf_or_fail(model_path("stories260K.gguf"));
  EXPECT_EQ(reader.version(), 3u);
  EXPECT_EQ(reader.alignment(), 32u);
  EXPECT_EQ(reader.data_offset(), 14176u);
  EXPECT_EQ(reader.metadata().size(), 19u);
  EXPECT_EQ(*reader.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(*reader.get<uint32_t>("llama.block_count"), 5u);
  EXPECT_EQ(*reader.get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*reader.get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(*reader.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*reader.get<float>("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(*reader.get<uint32_t>("tokenizer.ggml.seperator_token_id"), 4294967295u);

  const std::vector<std::string> tokens = *reader.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[3], "<0x00>");
  EXPECT_EQ(reader.get_array<int32_t>("tokenizer.ggml.token_type")->at(0), 2);
  EXPECT_EQ(reader.get_array<float>("tokenizer.ggml.scores")->size(), 512u);

  ASSERT_EQ(reader.tensors().size(), 48u);  // embeddings, output norm, output, 5 x 9 per block
  const TensorInfo* embd = reader.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->shape, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(embd->type, DType::F32);
  EXPECT_EQ(embd->offset, 0u);
  EXPECT_EQ(embd->n_bytes, 64u * 512 * 4);
  EXPECT_EQ(embd->rows(), 512);
  EXPECT_EQ(embd->data, reader.bytes().data() + 14176);
  const TensorInfo* down = reader.find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(down->offset, 1082880u);
  // The last tensor ends exactly at the end of the file.
  const TensorInfo& last = reader.tensors().back();
  EXPECT_EQ(last.name, "blk.4.ffn_norm.weight");
  EXPECT_EQ(last.data + last.n_bytes, reader.bytes().data() + reader.bytes().size());
}

TEST(RealModels, QuantizedStoriesKeepFfnDownInF16) {
  const Reader reader = open_gguf_or_fail(model_path("stories260K-Q4_0.gguf"));
  EXPECT_EQ(reader.find_tensor("blk.0.attn_q.weight")->type, DType::Q4_0);
  EXPECT_EQ(reader.find_tensor("blk.0.attn_q.weight")->n_bytes, 64u / 32 * 18 * 64);
  EXPECT_EQ(reader.find_tensor("blk.0.ffn_down.weight")->type, DType::F16);  // rows of 172
}

TEST(RealModels, QuantVectors) {
  const Reader reader = open_gguf_or_fail(reference_path("quant/quant-vectors.gguf"));
  EXPECT_EQ(reader.tensors().size(), 42u);  // 14 types x (src, q, deq)
  for (const char* type : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K",
                           "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs"}) {
    const std::string name = std::string(type) + ".q";
    const TensorInfo* q = reader.find_tensor(name);
    ASSERT_NE(q, nullptr) << name;
    EXPECT_EQ(dtype_name(q->type), type);
    EXPECT_EQ(q->shape, (std::vector<int64_t>{1024, 4}));
    EXPECT_EQ(q->n_bytes, static_cast<uint64_t>(row_bytes(q->type, 1024) * 4)) << name;
    ASSERT_NE(reader.find_tensor(std::string(type) + ".src"), nullptr);
    ASSERT_NE(reader.find_tensor(std::string(type) + ".deq"), nullptr);
  }
  EXPECT_EQ(reader.find_tensor("q4_K.q")->n_bytes, 4u * 4 * 144);
}

// Its metadata names what it is, and its tensors lie inside it.
void expect_well_formed(const std::string& path) {
  const Reader reader = open_gguf_or_fail(path);
  EXPECT_TRUE(reader.has("general.architecture") || reader.has("general.description")) << path;
  uint64_t data_bytes = 0;
  for (const TensorInfo& tensor : reader.tensors()) data_bytes += tensor.n_bytes;
  EXPECT_LE(reader.data_offset() + data_bytes, reader.bytes().size()) << path;
}

TEST(RealModels, EveryCommittedFileParses) {
  size_t files = 0;
  for (const char* folder : {"models", "reference/quant", "reference/tokenizer"}) {
    const std::filesystem::path dir = std::filesystem::path(PAGODA_TEST_DATA_DIR) / folder;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".gguf") continue;
      expect_well_formed(entry.path().string());
      ++files;
    }
  }
  EXPECT_EQ(files, 5u + 1u + 5u);  // stories260K in 5 formats, the quant vectors, 5 vocabularies
}

// The random-weight models, too large to commit: each skips with a line where it is absent.
class LargeModel : public ::testing::TestWithParam<const char*> {};

TEST_P(LargeModel, Parses) {
  PAGODA_SKIP_IF_MISSING(model_path(GetParam()));
  expect_well_formed(model_path(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(RealModels, LargeModel,
                         ::testing::Values("rand-llama-Q8_0.gguf", "rand-llama-Q4_K_M.gguf",
                                           "rand-qwen2-Q8_0.gguf", "rand-qwen3-Q6_K.gguf",
                                           "rand-gpt2-Q8_0.gguf"),
                         [](const auto& info) {
                           std::string name = std::filesystem::path(info.param).stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(RealModels, VocabOnlyFileHasNoDataSection) {
  const Reader reader = open_gguf_or_fail(reference_path("tokenizer/ggml-vocab-phi-3.gguf"));
  EXPECT_TRUE(reader.tensors().empty());
  EXPECT_EQ(reader.data_offset(), reader.bytes().size());  // 726019: ends unpadded
  EXPECT_EQ(reader.get_array<std::string>("tokenizer.ggml.tokens")->size(), 32064u);
  EXPECT_EQ(*reader.get<bool>("tokenizer.ggml.add_bos_token"), true);
}

TEST(RealModels, DefaultModel) {
  const std::string path =
      std::string(PAGODA_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  PAGODA_SKIP_IF_MISSING(path);
  const Reader reader = open_gguf_or_fail(path);
  EXPECT_EQ(*reader.get<std::string>("general.architecture"), "llama");
  EXPECT_EQ(*reader.get<uint32_t>("llama.block_count"), 30u);
  EXPECT_EQ(*reader.get<uint32_t>("llama.embedding_length"), 576u);
  EXPECT_EQ(*reader.get<std::string>("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(reader.metadata().size(), 33u);
  const std::vector<std::string> tokens = *reader.get_array<std::string>("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 49152u);
  EXPECT_EQ(tokens[0], "<|endoftext|>");
  const std::vector<std::string> merges = *reader.get_array<std::string>("tokenizer.ggml.merges");
  ASSERT_EQ(merges.size(), 48900u);
  EXPECT_EQ(merges[0], "Ġ t");
  ASSERT_EQ(reader.tensors().size(), 272u);  // 30 blocks x 9 + token_embd + output_norm
  const TensorInfo* embd = reader.find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, DType::Q8_0);
  EXPECT_EQ(embd->shape, (std::vector<int64_t>{576, 49152}));
  EXPECT_EQ(reader.find_tensor("blk.0.ffn_down.weight")->type, DType::Q4_1);
  EXPECT_EQ(reader.data_offset(), 1785664u);
}

}  // namespace
}  // namespace pagoda::gguf
